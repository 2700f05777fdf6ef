// Package codec encodes and decodes the MessagePack envelopes of the
// prediction channel (api/messages.md) by hand, on a byte-level reader that
// uses the MessagePack type codes of github.com/vmihailenco/msgpack/v5/msgpcode.
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
// unknown values is bounded by MaxSkipDepth.
//
// The client side (client.go) encodes requests and decodes replies for the
// Go client and the tests.
package codec
