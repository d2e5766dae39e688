"""LSP features, one module each; every module has `register(server)`."""
