// Package geminiwire holds the facts of the Gemini API's HTTP wire format
// (generativelanguage.googleapis.com, v1beta) that several of llmfleet's
// packages share: the GenerateContentRequest and GenerateContentResponse
// bodies, the usage metadata mapped onto llmfleet.Usage (thinking tokens
// billed as output, cached content apart), the served service tier, the
// operation-shaped batch resource of Batch Mode with its inlined responses
// and its responses file, Google's error envelope with its RetryInfo, and
// the server-sent events of streamGenerateContent?alt=sse.
//
// Everything here is pure: types and functions of bytes. The Gemini
// provider adapter parses with it, the Gemini emulator answers with it.
package geminiwire
