// Compile-time checks of the channel message types openapi-typescript
// generates: a predict request can be written, a reply is narrowed by its
// `type`, and a predict reply's concentrations are typed. The lines marked
// as expected errors fail the compile if the types go loose (any, never or
// an empty record).
import type { components } from "./schema";

type S = components["schemas"];

export const predict: S["ChannelRequest"] = {
  v: 1,
  type: "predict",
  id: "0b0c7d9e-6c39-4a5e-9a8f-3f1d2b4c5a60",
  body: {
    spectrum: { wavenumbers: [400, 401], intensities: [0.1, 0.2] },
    context: { batch_id: "B-1" },
  },
};

export const ping: S["ChannelRequest"] = { v: 1, type: "ping", id: "p-1" };

// @ts-expect-error a predict request needs a spectrum
export const noSpectrum: S["ChannelRequest"] = { v: 1, type: "predict", id: "x", body: {} };

// @ts-expect-error ping is a request type, not a reply type
export const wrongSide: S["ChannelReply"]["type"] = "ping";

/** The concentrations of a successful predict reply, undefined otherwise. */
export function concentrations(rep: S["ChannelReply"]): S["ComponentValues"] | undefined {
  if (rep.type !== "predict_reply" || rep.error !== null) {
    return undefined;
  }
  const c: S["ComponentValues"] = rep.body.concentrations;
  // @ts-expect-error concentrations are numbers by component, not a string
  const asText: string = rep.body.concentrations;
  void asText;
  return c;
}

/** The error of any reply: set on failures, whatever the reply type. */
export function failure(rep: S["ChannelReply"]): S["ChannelError"] | null {
  if (rep.type === "error") {
    const always: S["ChannelError"] = rep.error; // an error reply always carries one
    return always;
  }
  return rep.error;
}
