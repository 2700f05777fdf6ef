// Package codec encodes and decodes the MessagePack envelopes of the
// prediction channel (api/messages.md) by hand, on the byte-level reader and
// encoders of package wire (shared with the Go client, package client).
//
// The server side is built for the hot path: DecodeRequest fills a reusable
// Request without reflection and, once warmed up, without allocating; the
// Append*Reply functions append a whole reply to a caller-supplied buffer.
// Text is always written as msgpack str and numbers the contract calls
// "number" always as float64, so Python clients unpacking with raw=False see
// str and float. On input, text may be str or bin and numbers any int or
// float type.
//
// Decoding never trusts a length read from the input: every announced
// string, array or map size is compared with the bytes left (and arrays of
// numbers with MaxPoints) before anything is allocated, and skipping
// unknown values is bounded by wire.MaxSkipDepth.
//
// Failures are answered with the request's own reply type (ReplyTypeFor);
// the error object is the contract's (server/contract.Error), so both
// channels share one vocabulary and one retryability table. Encoding
// requests and decoding replies is the client's side, in package client.
package codec
