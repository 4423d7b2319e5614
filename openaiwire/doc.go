// Package openaiwire holds the facts of OpenAI's HTTP API wire format that
// several of llmfleet's packages share: the endpoints llmfleet routes, the
// error envelope and how to tell a flex refusal from it, the usage object
// of each endpoint mapped onto llmfleet.Usage, the service tier an answer
// reports, and the stream of chat.completion.chunk events a chat
// completion is sent as. The OpenAI provider adapter parses with it, the
// proxy's OpenAI face renders with it and the OpenAI emulator answers with
// it; the root package, which is provider-neutral, does not know it.
package openaiwire
