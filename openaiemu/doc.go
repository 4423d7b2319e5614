// Package openaiemu emulates a part of the OpenAI HTTP API for tests and
// demos: POST /v1/chat/completions (plain and streamed), POST /v1/responses
// (not streamed) and POST /v1/embeddings, behind "Authorization: Bearer"
// keys, with the flex service tier.
//
// Replies are deterministic: a chat answer is "Answer to: <last user
// text>", token counts are word counts, an embedding is derived from a hash
// of its input. A request asking service_tier "flex" for a model not in
// Server.FlexModels gets the 400 the real API sends; flex requests can be
// refused with 429 resource_unavailable by Server.FlexUnavailable, unbilled.
//
// Errors use the OpenAI envelope {"error":{"message","type","param","code"}}.
//
// Not modelled yet: the Files and Batches APIs, tools, images, audio,
// logprobs, streaming of /v1/responses, rate limits.
package openaiemu
