import { buildSimulator } from "./simulators/builder/declaration.js";
import { dronesSimulator } from "./simulators/drones/declaration.js";
import { sizingSimulator } from "./simulators/sizing/declaration.js";

/**
 * Every simulator the sandbox serves. Adding one is a folder under simulators/ and one line here.
 * The list holds declarations: a simulator's code loads when the sandbox starts (startSandbox).
 */
export const SIMULATORS = [buildSimulator, sizingSimulator, dronesSimulator] as const;
