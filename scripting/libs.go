package scripting

import lua "github.com/yuin/gopher-lua"

// openRedisLibs opens cjson, cmsgpack, bit and struct as globals. Placeholder: the libraries' own file replaces it.
func openRedisLibs(L *lua.LState) {}
