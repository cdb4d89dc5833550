import type { ServiceModule } from "../core/service/service.js";
import { builder } from "./builder/index.js";
import { drones } from "./drones/index.js";
import { sizing } from "./sizing/index.js";

/** Every service the server knows. Adding one is a folder under services/ and one line here. */
export const SERVICES: readonly ServiceModule<any>[] = [builder, sizing, drones];
