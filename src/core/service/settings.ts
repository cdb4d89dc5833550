import { z } from "zod";
import { isLoopbackHost } from "../base/loopback.js";

/** Building blocks for a service's settings schema (keyed by variable name, so errors name it). */
export const httpUrl = z
  .string()
  .url("must be an http(s) URL, like https://api.example.com")
  .refine((u) => /^https?:\/\//i.test(u), "must be an http(s) URL, like https://api.example.com")
  .transform((u) => u.replace(/\/+$/, ""));

export { positiveInt } from "../base/settings.js";

export const secret = z.string().min(1, "must not be empty");

/** A base URL on this machine: the sandbox, or a test double. Short poll intervals are fine there. */
export function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}
