package exec

import (
	"strings"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// The environment a call may set (execute_command's env) is checked here.
// The dangerous-command check and a human approving a command see the
// command line, not the environment; a variable that makes the loader, a
// shell, an interpreter or a build tool load code or run a program (or
// that replaces what the sandbox set) would run what neither saw. Such
// variables are refused, with the reason, rather than dropped.
//
// The list is drawn from the lists of the field: sudo's env_delete and
// env_check defaults, glibc's unsecure variables (removed for set-user-ID
// programs), and the variables that agent sandboxes (Codex, Claude Code,
// sandbox-runtime) strip, completed per tool from their documentation.
// Names are compared in upper case: some programs read either case
// (npm_config_*, the proxy variables), and refusing ld_preload costs
// nothing.

// envRule refuses the variables whose upper-case name is match, starts
// with match without its final "*", or ends with match without its
// leading "*".
type envRule struct {
	match, why string
}

// Reasons, one per class.
const (
	whyLoader    = "it changes what the dynamic loader or the C library loads (libraries, modules, files) into every program"
	whySandbox   = "the sandbox sets it (the program search path, the home folder, the temporary and cache folders, the proxy)"
	whyShell     = "it makes a shell read a file or run code at start-up, or changes how a shell parses every command"
	whyPython    = "it makes Python import or run other code"
	whyNode      = "it makes Node.js or a JavaScript package manager load code or run another program"
	whyRuby      = "it makes Ruby, Perl, Lua, PHP or another interpreter load code or run another program"
	whyJVM       = "it adds options or code to every Java, .NET or Erlang program"
	whyToolchain = "it chooses the compiler, linker or build tool, or passes them options that can load plugins or run programs"
	whyGo        = "it changes which Go toolchain, modules or programs the go command uses"
	whyGit       = "it makes git run another program or read another repository or configuration"
	whyProgram   = "it names a program (editor, pager, browser, password helper) other programs run"
	whyConfig    = "it points a program at a configuration file that can run commands"
	whyModules   = "it makes a library (a sanitizer, GTK, Qt, GLib, GStreamer, Vulkan, SASL) load modules or run a program"
)

// refusedEnv is the list, by class.
var refusedEnv = []envRule{
	// The loader and the C library (glibc's unsecure variables, sudo's
	// defaults, other systems' loaders).
	{"LD_*", whyLoader}, {"DYLD_*", whyLoader}, {"_RLD*", whyLoader}, {"LDR_*", whyLoader},
	{"LIBPATH", whyLoader}, {"SHLIB_PATH", whyLoader}, {"GLIBC_TUNABLES", whyLoader},
	{"GCONV_PATH", whyLoader}, {"GETCONF_DIR", whyLoader}, {"HOSTALIASES", whyLoader},
	{"LOCALDOMAIN", whyLoader}, {"LOCPATH", whyLoader}, {"MALLOC_TRACE", whyLoader}, {"NIS_PATH", whyLoader},
	{"NLSPATH", whyLoader}, {"RESOLV_HOST_CONF", whyLoader}, {"RES_OPTIONS", whyLoader}, {"TZDIR", whyLoader},
	{"PATH_LOCALE", whyLoader}, {"TERMINFO", whyLoader}, {"TERMINFO_DIRS", whyLoader}, {"TERMPATH", whyLoader},
	{"TERMCAP", whyLoader}, {"OPENSSL_CONF", whyLoader}, {"OPENSSL_CONF_INCLUDE", whyLoader},
	{"OPENSSL_ENGINES", whyLoader}, {"OPENSSL_MODULES", whyLoader},

	// What the sandbox sets (sandbox.DefaultEnv, and the XDG folders).
	{"PATH", whySandbox}, {"HOME", whySandbox}, {"TMPDIR", whySandbox}, {"XDG_*", whySandbox},
	{"GOCACHE", whySandbox}, {"GOPATH", whySandbox}, {"GOMODCACHE", whySandbox},
	{"HTTP_PROXY", whySandbox}, {"HTTPS_PROXY", whySandbox}, {"ALL_PROXY", whySandbox}, {"NO_PROXY", whySandbox},
	{"NODE_USE_ENV_PROXY", whySandbox},

	// Libraries that load modules or run a program named in a variable.
	{"*SAN_OPTIONS", whyModules}, {"*SYMBOLIZER_PATH", whyModules}, {"GTK_MODULES", whyModules},
	{"GTK3_MODULES", whyModules}, {"GTK_PATH", whyModules}, {"GTK_EXE_PREFIX", whyModules}, {"GTK_IM_MODULE_FILE", whyModules},
	{"QT_PLUGIN_PATH", whyModules}, {"QT_QPA_PLATFORM_PLUGIN_PATH", whyModules}, {"QT_QPA_PLATFORMTHEME", whyModules},
	{"QML2_IMPORT_PATH", whyModules}, {"QML_IMPORT_PATH", whyModules}, {"GIO_EXTRA_MODULES", whyModules},
	{"GIO_MODULE_DIR", whyModules}, {"GST_PLUGIN_*", whyModules}, {"GST_REGISTRY*", whyModules},
	{"GI_TYPELIB_PATH", whyModules}, {"VK_ICD_FILENAMES", whyModules}, {"VK_DRIVER_FILES", whyModules},
	{"VK_LAYER_PATH", whyModules}, {"VK_ADD_LAYER_PATH", whyModules}, {"VK_INSTANCE_LAYERS", whyModules},
	{"LIBGL_DRIVERS_PATH", whyModules}, {"__EGL_VENDOR_LIBRARY_*", whyModules}, {"SASL_PATH", whyModules},
	{"GNUTLS_SYSTEM_PRIORITY_FILE", whyModules}, {"ELECTRON_RUN_AS_NODE", whyModules},

	// Shells.
	{"BASH_ENV", whyShell}, {"ENV", whyShell}, {"BASH_FUNC_*", whyShell}, {"BASHOPTS", whyShell},
	{"SHELLOPTS", whyShell}, {"PS0", whyShell}, {"PS1", whyShell}, {"PS2", whyShell}, {"PS3", whyShell},
	{"PS4", whyShell}, {"PROMPT_COMMAND", whyShell}, {"IFS", whyShell}, {"CDPATH", whyShell},
	{"GLOBIGNORE", whyShell}, {"FPATH", whyShell}, {"NULLCMD", whyShell}, {"READNULLCMD", whyShell},
	{"ZDOTDIR", whyShell}, {"TMPPREFIX", whyShell}, {"INPUTRC", whyShell}, {"SHELL", whyShell},
	{"HISTFILE", whyShell}, {"KSH_ENV", whyShell}, {"BASH_LOADABLES_PATH", whyShell}, {"BASH_XTRACEFD", whyShell},
	{"EXECIGNORE", whyShell}, {"HOSTFILE", whyShell}, {"MAILPATH", whyShell},

	// Python.
	{"PYTHONSTARTUP", whyPython}, {"PYTHONPATH", whyPython}, {"PYTHONHOME", whyPython},
	{"PYTHONINSPECT", whyPython}, {"PYTHONUSERBASE", whyPython}, {"PYTHONBREAKPOINT", whyPython},
	{"PYTHONWARNINGS", whyPython}, {"PYTHONEXECUTABLE", whyPython}, {"PYTHONPLATLIBDIR", whyPython},
	{"PYTHONCASEOK", whyPython}, {"PYTHONPYCACHEPREFIX", whyPython}, {"__PYVENV_LAUNCHER__", whyPython},
	{"PYTEST_ADDOPTS", whyPython}, {"PYTEST_PLUGINS", whyPython}, {"PIP_*", whyPython}, {"UV_*", whyPython},
	{"POETRY_*", whyPython}, {"PIPENV_*", whyPython}, {"VIRTUAL_ENV", whyPython}, {"CONDA_*", whyPython},

	// Node.js and its package managers.
	{"NODE_OPTIONS", whyNode}, {"NODE_PATH", whyNode}, {"NODE_REPL_EXTERNAL_MODULE", whyNode},
	{"NPM_CONFIG_*", whyNode}, {"YARN_*", whyNode}, {"BUN_*", whyNode},
	{"COREPACK_*", whyNode}, {"DENO_DIR", whyNode}, {"PNPM_*", whyNode}, {"NPM_EXECPATH", whyNode},
	{"NPM_NODE_EXECPATH", whyNode}, {"NVM_*", whyNode}, {"VOLTA_*", whyNode},

	// Other interpreters.
	{"PERL5OPT", whyRuby}, {"PERL5LIB", whyRuby}, {"PERLLIB", whyRuby}, {"PERL5DB", whyRuby},
	{"PERLIO_DEBUG", whyRuby}, {"RUBYOPT", whyRuby}, {"RUBYLIB", whyRuby}, {"GEM_HOME", whyRuby},
	{"GEM_PATH", whyRuby}, {"BUNDLE_*", whyRuby}, {"IRBRC", whyRuby}, {"GEMRC", whyRuby},
	{"LUA_INIT*", whyRuby}, {"LUA_PATH*", whyRuby}, {"LUA_CPATH*", whyRuby}, {"PHPRC", whyRuby},
	{"PHP_INI_SCAN_DIR", whyRuby}, {"TCLLIBPATH", whyRuby}, {"R_PROFILE*", whyRuby}, {"R_ENVIRON*", whyRuby},
	{"R_LIBS*", whyRuby}, {"JULIA_LOAD_PATH", whyRuby}, {"JULIA_DEPOT_PATH", whyRuby},
	{"GHC_ENVIRONMENT", whyRuby}, {"RUBYGEMS_GEMDEPS", whyRuby}, {"RUBYSHELL", whyRuby},
	{"EMACSLOADPATH", whyRuby}, {"GUILE_LOAD_*", whyRuby}, {"OCAMLRUNPARAM", whyRuby}, {"OCAMLPATH", whyRuby},

	// The JVM, .NET, Erlang.
	{"JAVA_TOOL_OPTIONS", whyJVM}, {"_JAVA_OPTIONS", whyJVM}, {"JDK_JAVA_OPTIONS", whyJVM},
	{"JDK_JAVAC_OPTIONS", whyJVM}, {"JAVA_OPTS", whyJVM}, {"CLASSPATH", whyJVM}, {"JAVA_HOME", whyJVM},
	{"MAVEN_OPTS", whyJVM}, {"MAVEN_ARGS", whyJVM}, {"GRADLE_*", whyJVM}, {"SBT_OPTS", whyJVM},
	{"ANT_OPTS", whyJVM}, {"DOTNET_STARTUP_HOOKS", whyJVM}, {"DOTNET_ADDITIONAL_DEPS", whyJVM},
	{"DOTNET_SHARED_STORE", whyJVM}, {"CORECLR_*", whyJVM}, {"COR_PROFILER*", whyJVM},
	{"ERL_FLAGS", whyJVM}, {"ERL_AFLAGS", whyJVM}, {"ERL_ZFLAGS", whyJVM}, {"ERL_LIBS", whyJVM}, {"ELIXIR_ERL_OPTIONS", whyJVM},

	// Compilers and build tools (CC, CC_<target>, HOST_CC, TARGET_CC…
	// are added from toolchainVars).
	{"COMPILER_PATH", whyToolchain}, {"GCC_EXEC_PREFIX", whyToolchain}, {"CPATH", whyToolchain},
	{"C_INCLUDE_PATH", whyToolchain}, {"CPLUS_INCLUDE_PATH", whyToolchain}, {"OBJC_INCLUDE_PATH", whyToolchain},
	{"LIBRARY_PATH", whyToolchain}, {"CCC_OVERRIDE_OPTIONS", whyToolchain}, {"CROSS_COMPILE", whyToolchain},
	{"PKG_CONFIG*", whyToolchain}, {"CMAKE_*", whyToolchain}, {"CCACHE_*", whyToolchain},
	{"MAKEFLAGS", whyToolchain}, {"MFLAGS", whyToolchain}, {"GNUMAKEFLAGS", whyToolchain},
	{"MAKEFILES", whyToolchain}, {"CGO_*", whyToolchain}, {"RUSTC*", whyToolchain},
	{"RUSTDOC*", whyToolchain}, {"RUSTFLAGS", whyToolchain}, {"RUSTUP_*", whyToolchain},
	{"CARGO_*", whyToolchain}, {"CL", whyToolchain}, {"_CL_", whyToolchain}, {"CONFIG_SITE", whyToolchain},
	{"CONFIG_SHELL", whyToolchain}, {"MAKE", whyToolchain}, {"MAKESHELL", whyToolchain}, {"DISTCC_*", whyToolchain},
	{"SCCACHE_*", whyToolchain}, {"MESON_*", whyToolchain}, {"NINJA", whyToolchain}, {"BAZEL*", whyToolchain},

	// Go.
	{"GOFLAGS", whyGo}, {"GOENV", whyGo}, {"GOROOT", whyGo}, {"GOTOOLDIR", whyGo}, {"GOTOOLCHAIN", whyGo},
	{"GOCACHEPROG", whyGo}, {"GOPROXY", whyGo}, {"GONOPROXY", whyGo}, {"GOPRIVATE", whyGo},
	{"GOSUMDB", whyGo}, {"GONOSUMDB", whyGo}, {"GONOSUMCHECK", whyGo}, {"GOINSECURE", whyGo},
	{"GOVCS", whyGo}, {"GOWORK", whyGo},

	// Git and other version control.
	{"GIT_*", whyGit}, {"SSH_ASKPASS*", whyGit}, {"HG*", whyGit}, {"SVN_EDITOR", whyGit}, {"JJ_*", whyGit},
	{"SVN_SSH", whyGit}, {"CVS_RSH", whyGit}, {"RSYNC_RSH", whyGit}, {"RSYNC_CONNECT_PROG", whyGit},

	// Programs that other programs run, and options that make them run one.
	{"EDITOR", whyProgram}, {"VISUAL", whyProgram}, {"FCEDIT", whyProgram}, {"PAGER", whyProgram},
	{"MANPAGER", whyProgram}, {"SYSTEMD_PAGER", whyProgram}, {"BROWSER", whyProgram},
	{"LESSOPEN", whyProgram}, {"LESSCLOSE", whyProgram}, {"LESS", whyProgram}, {"LESSKEY*", whyProgram},
	{"SUDO_ASKPASS", whyProgram}, {"SUDO_EDITOR", whyProgram}, {"TAR_OPTIONS", whyProgram},
	{"ZIPOPT", whyProgram}, {"FZF_DEFAULT_*", whyProgram}, {"GREP_OPTIONS", whyProgram},
	{"PUPPETEER_*", whyProgram}, {"PLAYWRIGHT_*", whyProgram}, {"CHROME_BIN", whyProgram}, {"CHROME_PATH", whyProgram},
	{"CHROMIUM_BIN", whyProgram}, {"CHROMIUM_PATH", whyProgram}, {"FIREFOX_BIN", whyProgram},
	{"CYPRESS_RUN_BINARY", whyProgram}, {"SELENIUM_*", whyProgram}, {"SYSTEMD_EDITOR", whyProgram},
	{"DIFFTOOL", whyProgram}, {"MERGETOOL", whyProgram}, {"TERMINAL", whyProgram}, {"PINENTRY*", whyProgram},

	// Configuration files that can run commands.
	{"RIPGREP_CONFIG_PATH", whyConfig}, {"CURL_HOME", whyConfig}, {"WGETRC", whyConfig},
	{"PSQLRC", whyConfig}, {"VIMINIT", whyConfig}, {"EXINIT", whyConfig}, {"MYVIMRC", whyConfig},
	{"GVIMINIT", whyConfig}, {"VIMRUNTIME", whyConfig}, {"KUBECONFIG", whyConfig},
	{"AWS_CONFIG_FILE", whyConfig}, {"AWS_SHARED_CREDENTIALS_FILE", whyConfig}, {"DOCKER_CONFIG", whyConfig},
	{"MISE_*", whyConfig}, {"GNUPGHOME", whyConfig}, {"KRB5_CONFIG", whyConfig}, {"SSH_CONFIG", whyConfig},
	{"NETRC", whyConfig}, {"DOCKER_HOST", whyConfig}, {"CONTAINER_HOST", whyConfig}, {"ASDF_*", whyConfig},
}

// toolchainVars are the variables that choose a compiler or build tool, or
// pass it flags: each is refused as X, X_<target> (as the cc crate reads
// them), HOST_X and TARGET_X.
var toolchainVars = []string{
	"CC", "CXX", "CPP", "LD", "AR", "AS", "NM", "RANLIB", "STRIP", "OBJCOPY", "OBJDUMP", "FC", "F77", "NVCC",
	"CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "FFLAGS", "ARFLAGS", "RANLIBFLAGS",
}

// allowedEnv are names a refusing prefix covers that only set data: who
// made a commit, the certificates git trusts (as SSL_CERT_FILE does for
// others), and whether cgo is on.
var allowedEnv = map[string]bool{
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
	"GIT_SSL_CAINFO": true, "GIT_SSL_CAPATH": true, "CGO_ENABLED": true,
}

// pathValued are variables whose value is a name that a library turns
// into a file to read (a locale, a terminal description): as sudo does, a
// value with "/" (a path) or "%" is refused.
var pathValued = []string{"LANG", "LANGUAGE", "LINGUAS", "LC_*", "TERM", "COLORTERM"}

// envRules are refusedEnv (and toolchainVars) split for lookup, on first
// use: most processes never check an environment variable.
type envRules struct {
	exact              map[string]string
	prefixes, suffixes []envRule
}

var theEnvRules = sync.OnceValue(func() *envRules {
	exact := map[string]string{}
	var prefixes, suffixes []envRule
	add := func(r envRule) {
		if p, ok := strings.CutSuffix(r.match, "*"); ok {
			prefixes = append(prefixes, envRule{p, r.why})
		} else if p, ok := strings.CutPrefix(r.match, "*"); ok {
			suffixes = append(suffixes, envRule{p, r.why})
		} else {
			exact[r.match] = r.why
		}
	}
	for _, r := range refusedEnv {
		add(r)
	}
	for _, v := range toolchainVars {
		for _, m := range []string{v, v + "_*", "HOST_" + v, "TARGET_" + v} {
			add(envRule{m, whyToolchain})
		}
	}
	return &envRules{exact, prefixes, suffixes}
})

var envName = compiled(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkEnv returns the error that refuses setting name to value for a
// command, or nil.
func checkEnv(name, value string) *tool.Error {
	refuse := func(why string) *tool.Error {
		return tool.Errorf(tool.InvalidArguments, "environment variable %s is refused: %s", name, why).
			WithSuggestion("leave %s out of env; pass what the program needs as an option on the command line, where it is checked", name).
			WithDetail("variable", name).WithDetail("reason", why)
	}
	if !envName().MatchString(name) {
		return tool.Errorf(tool.InvalidArguments, "environment variable name %q is refused: a name is letters, digits and _, not starting with a digit", name).
			WithSuggestion("use a plain name such as MY_SETTING").WithDetail("variable", name).
			WithDetail("reason", "not a plain identifier")
	}
	if strings.IndexByte(value, 0) >= 0 {
		return refuse("its value holds a NUL byte, which would cut it short")
	}
	if strings.HasPrefix(value, "()") {
		return refuse("its value starts with \"()\", the form of an exported shell function that old shells run")
	}
	if why := refusedName(name); why != "" {
		return refuse(why)
	}
	if strings.ContainsAny(value, "/%") && matchAny(strings.ToUpper(name), pathValued) {
		return refuse("its value holds \"/\" or \"%\": a library would read it as a path to a file")
	}
	return nil
}

// refusedName returns why a call may not set name, or "".
func refusedName(name string) string {
	up := strings.ToUpper(name)
	if allowedEnv[up] {
		return ""
	}
	rules := theEnvRules()
	if why, ok := rules.exact[up]; ok {
		return why
	}
	for _, p := range rules.prefixes {
		if strings.HasPrefix(up, p.match) {
			return p.why
		}
	}
	for _, p := range rules.suffixes {
		if strings.HasSuffix(up, p.match) {
			return p.why
		}
	}
	return ""
}

// matchAny reports whether name is one of patterns (a trailing "*" is a
// prefix).
func matchAny(name string, patterns []string) bool {
	for _, p := range patterns {
		if pre, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, pre) || name == p {
			return true
		}
	}
	return false
}
