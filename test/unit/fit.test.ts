import { describe, expect, it } from "vitest";
import { fitStructured, fitText, MAX_STRUCTURED_CHARS } from "../../src/core/tools/fit.js";

describe("results that fit a model's context", () => {
  it("leaves a small result untouched", () => {
    const output = { items: [{ a: 1 }], note: "short" };
    expect(fitStructured(output)).toEqual({ output, trims: [] });
  });

  it("measures a result its quick bound cannot place, and trims it only when it is too large", () => {
    // 20,000 characters: under the limit, but above the bound that counts each as escaped.
    const near = { text: "a".repeat(20_000), when: new Date(0), n: 1 };
    expect(fitStructured(near)).toEqual({ output: near, trims: [] });
    const over = { items: Array.from({ length: 200 }, (_, i) => ({ i, text: "b".repeat(400) })) };
    const { trims } = fitStructured(over);
    expect(trims).toEqual([{ path: "items", kept: 100, total: 200, unit: "items" }]);
  });

  it("halves the largest list until the result fits, and says what was left out", () => {
    const records = Array.from({ length: 2000 }, (_, i) => ({
      id: i,
      name: `record number ${i}`,
      notes: "x".repeat(40),
    }));
    const { output, trims } = fitStructured({ results: records, count: records.length });
    expect(JSON.stringify(output).length).toBeLessThanOrEqual(MAX_STRUCTURED_CHARS + 500);
    const kept = (output.results as unknown[]).length;
    expect(kept).toBeLessThan(2000);
    expect((output.results as Array<{ id: number }>)[0].id).toBe(0);
    expect(trims).toEqual([{ path: "results", kept, total: 2000, unit: "items" }]);
    expect(output._trimmed).toMatchObject({ trims });
    expect(fitText("12 records", trims)).toMatch(
      /Trimmed to fit the context: results: \d+ of 2000 items\. Use the tool's paging/,
    );
  });

  it("cuts very long strings and caps the text", () => {
    const { output, trims } = fitStructured({ logs: "y".repeat(60_000) });
    expect((output.logs as string).length).toBeLessThan(5_000);
    expect(trims[0]).toMatchObject({ path: "logs", total: 60_000, unit: "characters" });
    const text = fitText("z".repeat(20_000), []);
    expect(text.length).toBeLessThan(16_100);
    expect(text).toMatch(/4000 more characters not shown/);
  });
});
