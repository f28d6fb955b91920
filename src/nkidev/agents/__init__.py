"""nkidev.agents: the skills and agents nkidev ships for coding assistants (package data), their installer
for Claude Code, Kiro and Cursor, and an Agent Skills validator. The MCP server is `nkidev.mcp_server`."""
