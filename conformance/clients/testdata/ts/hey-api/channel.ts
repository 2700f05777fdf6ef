// Compile-time checks of the channel message types @hey-api/openapi-ts
// generates: a predict request can be written, a reply is narrowed by its
// `type`, and a predict reply's concentrations are typed. The lines marked
// as expected errors fail the compile if the types go loose.
import type { ChannelError, ChannelReply, ChannelRequest, ComponentValues } from "./api";

export const predict: ChannelRequest = {
  v: 1,
  type: "predict",
  id: "0b0c7d9e-6c39-4a5e-9a8f-3f1d2b4c5a60",
  body: { spectrum: { wavenumbers: [400, 401], intensities: [0.1, 0.2] } },
};

// @ts-expect-error a predict request needs a spectrum
export const noSpectrum: ChannelRequest = { v: 1, type: "predict", id: "x", body: {} };

/** The concentrations of a successful predict reply, undefined otherwise. */
export function concentrations(rep: ChannelReply): ComponentValues | undefined {
  if (rep.type !== "predict_reply" || rep.error !== null) {
    return undefined;
  }
  // @ts-expect-error concentrations are numbers by component, not a string
  const asText: string = rep.body.concentrations;
  void asText;
  return rep.body.concentrations;
}

/** The error of any reply: set on failures, whatever the reply type. */
export function failure(rep: ChannelReply): ChannelError | null {
  if (rep.type === "error") {
    const always: ChannelError = rep.error; // an error reply always carries one
    return always;
  }
  return rep.error;
}
