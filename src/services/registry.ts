import { loadService, type ServiceDeclaration, type ServiceModule } from "../core/service/service.js";
import { builder } from "./builder/index.js";
import { drones } from "./drones/index.js";
import { sizing } from "./sizing/index.js";

/**
 * Every service the server knows. Adding one is a folder under services/ and one line here. The
 * list holds declarations: their tools and clients load when first needed (loadServices).
 */
export const SERVICES: readonly ServiceDeclaration<any>[] = [builder, sizing, drones];

/** The services with their implementations (tools, clients), loaded once. */
export function loadServices(services: readonly ServiceDeclaration<any>[] = SERVICES): Promise<ServiceModule<any>[]> {
  return Promise.all(services.map(loadService));
}
