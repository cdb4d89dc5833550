import { pathId, plainPath } from "../../core/base/path-id.js";
import { isObject, type Json } from "../../core/base/json.js";
import { UpstreamError, type UpstreamClient } from "../../core/upstream/upstream.js";
import type { DroneLike } from "./fleet.js";

export type { Json };

const id = pathId;

/**
 * One typed function per drone-fleet operation. Paths per docs/openapi/drones.yaml. The shapes of
 * missions, alerts and API keys are not shown in the spec: they come back as the upstream sends them.
 */
export class DronesClient {
  constructor(readonly http: UpstreamClient) {}

  listDrones(signal?: AbortSignal): Promise<DroneLike[]> {
    return this.list("/api/drones", "drones", signal) as Promise<DroneLike[]>;
  }

  getDrone(droneId: string, signal?: AbortSignal): Promise<DroneLike> {
    return this.one(`/api/drones/${id(droneId)}`, signal) as Promise<DroneLike>;
  }

  listMissions(signal?: AbortSignal): Promise<Json[]> {
    return this.list("/api/missions", "missions", signal);
  }

  getMission(missionId: string, signal?: AbortSignal): Promise<Json> {
    return this.one(`/api/missions/${id(missionId)}`, signal);
  }

  listAlerts(signal?: AbortSignal): Promise<Json[]> {
    return this.list("/api/alerts", "alerts", signal);
  }

  getAlert(alertId: string, signal?: AbortSignal): Promise<Json> {
    return this.one(`/api/alerts/${id(alertId)}`, signal);
  }

  /** The body is the caller's change set, sent untouched (its shape is not shown in the spec). */
  async updateAlert(alertId: string, changes: Json, signal?: AbortSignal): Promise<unknown> {
    return this.http.request<unknown>({ method: "PUT", path: `/api/alerts/${id(alertId)}`, body: changes, signal });
  }

  listApiKeys(signal?: AbortSignal): Promise<Json[]> {
    return this.list("/api/api-keys", "apiKeys", signal);
  }

  /** A list answer: an array, or (not shown in the spec, accepted) an object holding one under a usual name. */
  private async list(path: string, name: string, signal?: AbortSignal): Promise<Json[]> {
    const data = await this.http.request<unknown>({ method: "GET", path, signal });
    const array = Array.isArray(data)
      ? data
      : isObject(data)
        ? [data[name], data.items, data.results, data.data].find(Array.isArray)
        : undefined;
    if (!array)
      throw new UpstreamError(
        "drones",
        200,
        "UNEXPECTED_SHAPE",
        `The drones service answered GET ${path} without a list.`,
        { method: "GET", path, idempotent: true },
      );
    return array.filter(isObject);
  }

  private async one(marked: string, signal?: AbortSignal): Promise<Json> {
    const data = await this.http.request<unknown>({ method: "GET", path: marked, signal });
    const path = plainPath(marked);
    if (!isObject(data))
      throw new UpstreamError(
        "drones",
        200,
        "UNEXPECTED_SHAPE",
        `The drones service answered GET ${path} without an object.`,
        { method: "GET", path, idempotent: true },
      );
    return data;
  }
}
