import { buildSimulator } from "./simulators/builder/index.js";
import { dronesSimulator } from "./simulators/drones/index.js";
import { sizingSimulator } from "./simulators/sizing/index.js";

/** Every simulator the sandbox serves. Adding one is a folder under simulators/ and one line here. */
export const SIMULATORS = [buildSimulator, sizingSimulator, dronesSimulator] as const;
