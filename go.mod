module github.com/llmfleet/llmfleet

go 1.26.8
