"""`lamina mcp`: the engine for coding agents, over the Model Context Protocol (stdio).

session: the index the server keeps open (writer or read-only), fresh between calls.
tools:   argument and result Structs, and what each tool does.
render:  the compact text an agent reads next to the structured result.
server:  the SDK wiring (tools, resources, errors) and the stdio loop.
"""
