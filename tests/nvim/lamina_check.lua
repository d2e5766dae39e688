-- Neovim's built-in LSP client against `lamina serve`: an editor that is not ours, headless.
--
-- Run by tests/test_neovim.py:  nvim --headless -u NONE -i NONE -n -c "luafile tests/nvim/lamina_check.lua"
-- Inputs come from the environment (LAMINA_NVIM_*); the result is one JSON object written to
-- $LAMINA_NVIM_OUT and to stdout. Works on Neovim 0.7 (vim.lsp.start_client + buf_attach_client)
-- and uses vim.lsp.start where it exists (>= 0.8).

local env = vim.env
local out_path = env.LAMINA_NVIM_OUT
local ws = env.LAMINA_NVIM_WORKSPACE
local root = env.LAMINA_NVIM_ROOT
local python = env.LAMINA_NVIM_PYTHON
local timeout_ms = tonumber(env.LAMINA_NVIM_TIMEOUT_MS or '30000')

local v = vim.version()
local report = { nvim = string.format('%d.%d.%d', v.major, v.minor, v.patch), steps = {} }
local t0 = vim.loop.hrtime()

local function now_ms()
  return math.floor((vim.loop.hrtime() - t0) / 1e6)
end

local function step(name, data)
  table.insert(report.steps, { t_ms = now_ms(), step = name, data = data })
end

local function finish(ok, err)
  report.ok = ok
  report.error = err
  report.elapsed_ms = now_ms()
  local text = vim.fn.json_encode(report)
  if out_path then
    local f = assert(io.open(out_path, 'w'))
    f:write(text)
    f:close()
  end
  io.stdout:write(text .. '\n')
  io.stdout:flush()
  vim.cmd(ok and 'qall!' or 'cquit! 1')
end

-- The first `path.py::Symbol` an implemented_by entry names, in file order.
local function first_declared()
  local files = vim.fn.glob(ws .. '/.lamina/workflows/*.yaml', false, true)
  table.sort(files)
  for _, y in ipairs(files) do
    for line in io.lines(y) do
      local file, sym = line:match('([%w_%./%-]+%.py)::([%w_%.]+)')
      if file then
        return file, sym, y
      end
    end
  end
  error('no implemented_by entry with a .py::Symbol in ' .. ws .. '/.lamina/workflows')
end

-- 0-based line and character of `def name` / `class name` in a file.
local function find_symbol(path, name)
  local n = 0
  for line in io.lines(path) do
    local s = line:find('^%s*async%s+def%s+' .. name .. '%f[^%w_]')
      or line:find('^%s*def%s+' .. name .. '%f[^%w_]')
      or line:find('^%s*class%s+' .. name .. '%f[^%w_]')
    if s then
      local col = line:find(name .. '%f[^%w_]', s)
      return n, col - 1
    end
    n = n + 1
  end
  error(name .. ' not defined in ' .. path)
end

-- client:request_sync on 0.11+ (methods), client.request_sync before
local function request_sync(client, method, params, timeout, bufnr)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request_sync(method, params, timeout, bufnr)
  end
  return client.request_sync(method, params, timeout, bufnr)
end

local function hover_text(contents)
  if type(contents) == 'string' then
    return contents
  end
  if type(contents) == 'table' then
    if contents.value then
      return contents.value
    end
    local parts = {}
    for _, c in ipairs(contents) do
      table.insert(parts, type(c) == 'table' and c.value or tostring(c))
    end
    return table.concat(parts, '\n')
  end
  return ''
end

local function main()
  assert(ws and root and python and out_path, 'set LAMINA_NVIM_WORKSPACE, _ROOT, _PYTHON and _OUT')
  local rel, sym = first_declared()
  local path = ws .. '/' .. rel
  local name = sym:match('([%w_]+)$')
  local line0, char0 = find_symbol(path, name)
  report.declared = { file = rel, symbol = sym, line0 = line0, character0 = char0 }

  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()

  local states, exit_code = 0, nil
  local config = {
    name = 'lamina',
    cmd = { python, '-m', 'lsp_server.cli', 'serve' },
    cmd_cwd = root,
    cmd_env = {
      PYTHONPATH = root,
      LAMINA_CACHE_DIR = env.LAMINA_NVIM_CACHE,
      LAMINA_MODEL_DIR = env.LAMINA_NVIM_MODEL_DIR,
    },
    root_dir = ws,
    workspace_folders = { { uri = vim.uri_from_fname(ws), name = 'shop' } },
    init_options = { indexDir = env.LAMINA_NVIM_INDEX },
    handlers = {
      ['lamina/indexState'] = function() states = states + 1 end,
      ['lamina/packetChanged'] = function() end,
    },
    on_exit = function(code) exit_code = code end,
  }
  local client_id
  if vim.lsp.start then
    client_id = vim.lsp.start(config, { bufnr = bufnr })
    report.started_with = 'vim.lsp.start'
  else
    client_id = vim.lsp.start_client(config)
    report.started_with = 'vim.lsp.start_client + vim.lsp.buf_attach_client'
  end
  assert(client_id, 'the client did not start')
  local ok = vim.wait(timeout_ms, function()
    local c = vim.lsp.get_client_by_id(client_id)
    return c ~= nil and c.initialized == true
  end, 20)
  assert(ok, 'initialize did not finish within ' .. timeout_ms .. ' ms')
  local client = vim.lsp.get_client_by_id(client_id)
  if not vim.lsp.start then
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  local caps = client.server_capabilities or client.resolved_capabilities or {}
  step('initialized', { hover = caps.hoverProvider ~= nil or caps.hover == true,
                         code_lens = caps.codeLensProvider ~= nil or caps.code_lens == true })

  -- the first generation: poll the status request (today's lamina/status, or lamina/contextStatus)
  local method, generation, polls = 'lamina/contextStatus', nil, 0
  local deadline = now_ms() + timeout_ms
  while now_ms() < deadline do
    polls = polls + 1
    local res, err = request_sync(client, method, {}, 5000, bufnr)
    if res and res.err and res.err.code == -32601 and method == 'lamina/contextStatus' then
      method = 'lamina/status'
    elseif res and res.result and type(res.result.generation) == 'number' then
      generation = res.result.generation
      report.status = { method = method, generation = generation, files = res.result.files,
                        chunks = res.result.chunks, retrieval = res.result.retrieval }
      break
    else
      vim.wait(200)
    end
  end
  assert(generation, 'no generation within ' .. timeout_ms .. ' ms (' .. polls .. ' polls of ' .. method .. ')')
  step('first generation', { method = method, polls = polls, generation = generation, index_states = states })

  local uri = vim.uri_from_bufnr(bufnr)
  local hover, herr = request_sync(client, 'textDocument/hover', {
    textDocument = { uri = uri }, position = { line = line0, character = char0 } }, 10000, bufnr)
  assert(hover and not hover.err, 'hover failed: ' .. vim.inspect(hover and hover.err or herr))
  report.hover = hover.result and hover.result ~= vim.NIL and hover_text(hover.result.contents) or ''
  step('hover', { chars = #report.hover })

  local lens, lerr = request_sync(client, 'textDocument/codeLens', { textDocument = { uri = uri } }, 10000, bufnr)
  assert(lens and not lens.err, 'codeLens failed: ' .. vim.inspect(lens and lens.err or lerr))
  report.code_lenses = {}
  for _, l in ipairs(lens.result ~= vim.NIL and lens.result or {}) do
    table.insert(report.code_lenses, { line0 = l.range.start.line, title = l.command and l.command.title or '',
                                       command = l.command and l.command.command or '' })
  end
  step('codeLens', { count = #report.code_lenses })

  -- Neovim's own lens path (what a user sees as virtual text)
  vim.lsp.codelens.refresh()
  vim.wait(5000, function() return #vim.lsp.codelens.get(bufnr) > 0 end, 20)
  report.displayed_lenses = #vim.lsp.codelens.get(bufnr)
  step('vim.lsp.codelens', { displayed = report.displayed_lenses })

  local t_stop = now_ms()
  vim.lsp.stop_client(client_id)
  vim.wait(10000, function() return exit_code ~= nil end, 20)
  report.server_exit_code = exit_code
  report.shutdown_ms = now_ms() - t_stop
  report.index_states = states  -- lamina/indexState notifications the custom handler received
  step('stopped', { exit_code = exit_code })
end

local ok, err = xpcall(main, debug.traceback)
if ok then
  finish(true, nil)
else
  finish(false, tostring(err))
end
