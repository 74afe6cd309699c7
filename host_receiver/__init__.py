"""host-receiver: receive server-initiated MCP sampling and elicitation requests as tasks."""
