// How each sizing tool and prompt is called by the tests that drive them all (the secret canary).
import type { ServiceSamples } from "../../core/service/samples.js";

const MEASUREMENTS = { chest: 96, waist: 82, hips: 100 };
/** The first catalog item the drive listed. */
const firstItem = (run: { result<T>(key: string): T | undefined }) =>
  run.result<{ items: Array<{ _id: string }> }>("sizing_get_catalog")?.items[0]?._id;

export const sizingSamples: ServiceSamples = {
  tools: [
    { tool: "sizing_get_catalog", args: () => ({ limit: 5 }) },
    {
      tool: "sizing_recommend_size",
      args: (run) => {
        const item = firstItem(run);
        return item ? { clothing_item_id: item, measurements: MEASUREMENTS, preferred_fit: "regular" } : undefined;
      },
    },
    {
      tool: "sizing_create_try_on",
      args: (run) => {
        const item = firstItem(run);
        return item
          ? { clothing_item_id: item, user_id: `${run.prefix}-customer`, measurements: MEASUREMENTS }
          : undefined;
      },
    },
  ],
  prompts: { fitting_room: [{}, { item: "Classic Tee", category: "tops" }, { category: "dresses" }] },
};
