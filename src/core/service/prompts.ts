import type { z } from "zod";

/** A prompt as a service declares it: arguments as a zod shape, one user message of text. */
export interface PromptDef<A extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  args: A;
  text(args: z.infer<z.ZodObject<A>>): string;
}

export function definePrompt<A extends z.ZodRawShape>(def: PromptDef<A>): PromptDef<A> {
  return def;
}
