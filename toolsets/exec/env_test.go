package exec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/tool"
)

// TestEnvRuleEntries: every entry of the list is refused, in upper and
// lower case, and for a prefix with anything after it.
func TestEnvRuleEntries(t *testing.T) {
	var names []string
	for _, r := range refusedEnv {
		if p, ok := strings.CutSuffix(r.match, "*"); ok {
			names = append(names, p+"X", p+"SOME_THING")
		} else if p, ok := strings.CutPrefix(r.match, "*"); ok {
			names = append(names, "X"+p, "SOME_THING"+p, p)
		} else {
			names = append(names, r.match)
		}
	}
	for _, v := range toolchainVars {
		names = append(names, v, v+"_x86_64_unknown_linux_gnu", "HOST_"+v, "TARGET_"+v)
	}
	for _, n := range names {
		for _, name := range []string{n, strings.ToLower(n)} {
			if e := checkEnv(name, "x"); e == nil {
				t.Errorf("%s: not refused", name)
			} else if e.Type != tool.InvalidArguments || !strings.Contains(e.Message, name) || e.Details["variable"] != name {
				t.Errorf("%s: %s %q %v", name, e.Type, e.Message, e.Details)
			}
		}
	}
}

// TestEnvClasses: names of each class, as a caller would send them, are
// refused; plain settings pass.
func TestEnvClasses(t *testing.T) {
	refused := map[string][]string{
		"loader": {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_DEBUG_OUTPUT", "LD_PROFILE", "LD_BIND_NOW",
			"LD_ORIGIN_PATH", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "DYLD_FRAMEWORK_PATH", "GLIBC_TUNABLES",
			"GCONV_PATH", "HOSTALIASES", "LOCPATH", "NLSPATH", "RES_OPTIONS", "LOCALDOMAIN", "MALLOC_TRACE",
			"TZDIR", "OPENSSL_CONF", "TERMINFO", "_RLD_ROOT", "LDR_PRELOAD64"},
		"the sandbox's": {"PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_DIRS", "XDG_RUNTIME_DIR",
			"XDG_CACHE_HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "npm_config_cache", "PIP_CACHE_DIR",
			"CARGO_HOME", "YARN_CACHE_FOLDER", "GRADLE_USER_HOME", "BUN_INSTALL_CACHE_DIR"},
		"shell": {"BASH_ENV", "ENV", "BASH_FUNC_ls", "BASH_FUNC_x", "SHELLOPTS", "BASHOPTS", "PS4", "PS1",
			"PROMPT_COMMAND", "IFS", "CDPATH", "GLOBIGNORE", "ZDOTDIR", "FPATH", "SHELL", "INPUTRC"},
		"python": {"PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT", "PYTHONBREAKPOINT",
			"PYTHONWARNINGS", "PYTHONUSERBASE", "PYTHONPYCACHEPREFIX", "PYTEST_ADDOPTS", "PYTEST_PLUGINS",
			"PIP_INDEX_URL", "PIP_CONFIG_FILE", "UV_INDEX_URL", "VIRTUAL_ENV"},
		"node": {"NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "NPM_CONFIG_SCRIPT_SHELL",
			"npm_config_node_options", "npm_config_userconfig", "npm_config_registry", "YARN_YARN_PATH",
			"YARN_RC_FILENAME", "COREPACK_NPM_REGISTRY", "PNPM_HOME"},
		"interpreters": {"PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "GEM_PATH",
			"BUNDLE_GEMFILE", "LUA_INIT", "LUA_INIT_5_4", "LUA_PATH_5_3", "PHPRC", "PHP_INI_SCAN_DIR",
			"R_PROFILE_USER", "IRBRC"},
		"jvm": {"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "MAVEN_OPTS",
			"GRADLE_OPTS", "DOTNET_STARTUP_HOOKS", "CORECLR_PROFILER_PATH", "COR_PROFILER", "ERL_AFLAGS"},
		"toolchain": {"CC", "CXX", "LD", "AR", "CFLAGS", "LDFLAGS", "CC_x86_64-unknown-linux-gnu",
			"CC_aarch64_unknown_linux_gnu", "HOST_CC", "TARGET_CXX", "CGO_CFLAGS", "CGO_LDFLAGS", "RUSTC_WRAPPER",
			"RUSTC_WORKSPACE_WRAPPER", "RUSTFLAGS", "RUSTDOCFLAGS", "RUSTUP_TOOLCHAIN", "CARGO_BUILD_RUSTC_WRAPPER",
			"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", "CARGO_ALIAS_B", "MAKEFLAGS", "GNUMAKEFLAGS",
			"MAKEFILES", "CMAKE_TOOLCHAIN_FILE", "CMAKE_C_COMPILER_LAUNCHER", "CCACHE_PREFIX", "PKG_CONFIG_PATH",
			"GCC_EXEC_PREFIX", "COMPILER_PATH", "CPATH"},
		"go": {"GOFLAGS", "GOENV", "GOROOT", "GOTOOLCHAIN", "GOCACHEPROG", "GOPROXY", "GONOSUMDB", "GOSUMDB",
			"GOINSECURE", "GOWORK"},
		"git": {"GIT_SSH_COMMAND", "GIT_SSH", "GIT_ASKPASS", "GIT_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF",
			"GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
			"GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0",
			"GIT_CONFIG_PARAMETERS", "GIT_PROXY_COMMAND", "GIT_SEQUENCE_EDITOR", "SSH_ASKPASS", "HGRCPATH",
			"RSYNC_RSH"},
		"programs": {"EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE", "LESS",
			"SUDO_ASKPASS", "TAR_OPTIONS", "FZF_DEFAULT_COMMAND", "FZF_DEFAULT_OPTS"},
		"configuration": {"RIPGREP_CONFIG_PATH", "CURL_HOME", "WGETRC", "PSQLRC", "VIMINIT", "EXINIT",
			"KUBECONFIG", "AWS_CONFIG_FILE", "DOCKER_CONFIG", "MISE_CONFIG_FILE"},
		"the sandbox's proxy": {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
			"NO_PROXY", "no_proxy", "NODE_USE_ENV_PROXY"},
		"modules": {"ASAN_OPTIONS", "LSAN_OPTIONS", "MSAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS", "HWASAN_OPTIONS",
			"ASAN_SYMBOLIZER_PATH", "LLVM_SYMBOLIZER_PATH", "GTK_MODULES", "GTK_PATH", "QT_PLUGIN_PATH",
			"QT_QPA_PLATFORM_PLUGIN_PATH", "GIO_EXTRA_MODULES", "GIO_MODULE_DIR", "GST_PLUGIN_PATH", "GST_PLUGIN_PATH_1_0",
			"GST_PLUGIN_SYSTEM_PATH", "VK_LAYER_PATH", "VK_ICD_FILENAMES", "LIBGL_DRIVERS_PATH",
			"__EGL_VENDOR_LIBRARY_FILENAMES", "SASL_PATH", "ELECTRON_RUN_AS_NODE", "GI_TYPELIB_PATH"},
		"more shell": {"BASH_LOADABLES_PATH", "BASH_XTRACEFD", "EXECIGNORE", "MAILPATH"},
		"more node": {"PNPM_HOME", "PNPM_CONFIG_SCRIPT_SHELL", "pnpm_config_node_options", "npm_execpath", "npm_node_execpath",
			"NVM_DIR", "VOLTA_HOME"},
		"more interpreters": {"RUBYGEMS_GEMDEPS", "EMACSLOADPATH", "GUILE_LOAD_PATH", "OCAMLRUNPARAM"},
		"build":             {"CONFIG_SITE", "CONFIG_SHELL", "MAKE", "MAKESHELL", "DISTCC_HOSTS", "SCCACHE_DIR", "MESON_EXE_WRAPPER", "NINJA", "BAZELISK_HOME"},
		"more vcs":          {"HGRCPATH", "HGEDITOR", "HGMERGE", "HGPLAIN", "HGUSER", "hgrcpath", "JJ_CONFIG", "JJ_EDITOR"},
		"browsers": {"PUPPETEER_EXECUTABLE_PATH", "PUPPETEER_CACHE_DIR", "PLAYWRIGHT_BROWSERS_PATH", "CHROME_BIN",
			"CHROME_PATH", "CHROMIUM_BIN", "FIREFOX_BIN", "CYPRESS_RUN_BINARY", "SELENIUM_MANAGER_PATH"},
		"more programs":      {"SYSTEMD_EDITOR", "DIFFTOOL", "MERGETOOL", "PINENTRY_USER_DATA", "TERMINAL"},
		"more configuration": {"GNUPGHOME", "KRB5_CONFIG", "NETRC", "DOCKER_HOST", "CONTAINER_HOST", "ASDF_CONFIG_FILE"},
		"not a plain name": {"BASH_FUNC_ls%%", "A-B", "1ABC", "A B", "A=B", "", "A.B", "Ä", "A\x00B", "$X",
			"A\nB", "X;Y", "PATH "},
	}
	for class, names := range refused {
		for _, name := range names {
			e := checkEnv(name, "/workspace/evil")
			if e == nil {
				t.Errorf("%s: %q not refused", class, name)
				continue
			}
			if e.Type != tool.InvalidArguments || e.Details["variable"] != name || e.Details["reason"] == "" || e.Suggestion == "" {
				t.Errorf("%s: %q: %+v", class, name, e)
			}
		}
	}
	values := []struct{ name, value string }{
		{"FOO", "a\x00b"}, {"FOO", "() { id; }"}, {"X", "(){ :;}; id"},
		{"LANG", "../../tmp/x"}, {"LC_ALL", "/ws/locale"}, {"LC_MESSAGES", "%n%n"}, {"LANGUAGE", "/x"},
		{"TERM", "../../ws/term"},
	}
	for _, v := range values {
		if e := checkEnv(v.name, v.value); e == nil || e.Details["variable"] != v.name {
			t.Errorf("%s=%q: not refused (%v)", v.name, v.value, e)
		}
	}
	allowed := []struct{ name, value string }{
		{"FOO", "bar"}, {"DEBUG", "1"}, {"NODE_ENV", "production"}, {"RUST_LOG", "debug"},
		{"RUST_BACKTRACE", "1"}, {"GOOS", "linux"}, {"GOARCH", "arm64"}, {"CGO_ENABLED", "0"},
		{"PYTHONUNBUFFERED", "1"}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONHASHSEED", "0"},
		{"PYTHONIOENCODING", "utf-8"}, {"GIT_AUTHOR_NAME", "A"}, {"GIT_COMMITTER_EMAIL", "a@b"},
		{"GIT_SSL_CAINFO", "ca.pem"}, {"SSL_CERT_FILE", "ca.pem"},
		{"LANG", "en_US.UTF-8"}, {"LC_ALL", "C"}, {"TZ", "Europe/Paris"}, {"TERM", "xterm-256color"},
		{"CI", "true"}, {"NO_COLOR", "1"}, {"FORCE_COLOR", "0"}, {"MY_VAR_1", "/ws/x"}, {"_X", "y"},
		{"CCACHE", "x"}, {"ACCOUNT", "x"}, {"SUCCESS", "x"}, {"PATHS_FILE", "x"}, {"HOMEPAGE", "x"},
		{"ENVIRONMENT", "dev"}, {"PS", "x"}, {"SHELL_COLOR", "x"},
	}
	for _, v := range allowed {
		if e := checkEnv(v.name, v.value); e != nil {
			t.Errorf("%s=%q refused: %s", v.name, v.value, e.Message)
		}
	}
}

// TestEnvCoversSandboxDefaults: a call cannot replace any variable the
// sandbox sets, but the language and terminal: those of DefaultEnv and
// ProxyEnv, and every one a real command with a proxy network finds in its
// environment (but what its shell sets itself).
func TestEnvCoversSandboxDefaults(t *testing.T) {
	var names []string
	for _, kv := range append(sandbox.DefaultEnv(), sandbox.ProxyEnv()...) {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	proxy, err := egress.NewProxy(egress.ProxyConfig{Policy: mustEgressPolicy(t, "allowed.test")})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	r := call(t, toolMap(t, Options{Root: t.TempDir(), Egress: proxy})["execute_command"], context.Background(),
		map[string]any{"argv": []string{"env", "-0"}})
	if r.Error != nil {
		t.Fatal(r.Text())
	}
	seen := 0
	for _, kv := range strings.Split(r.Structured.(Output).Stdout, "\x00") {
		if name, _, ok := strings.Cut(kv, "="); ok {
			names = append(names, name)
			seen++
		}
	}
	if seen < len(sandbox.DefaultEnv())+len(sandbox.ProxyEnv()) {
		t.Fatalf("the command saw %d variables: %s", seen, r.Text())
	}
	for _, name := range names {
		switch name {
		case "LANG", "TERM", "PWD", "SHLVL", "_", "OLDPWD":
			continue
		}
		if refusedName(name) == "" {
			t.Errorf("the sandbox sets %s, and a call may replace it", name)
		}
	}
}

// TestEnvRefusedBeforeRunning: a refused variable fails the call with
// invalid_arguments naming it, and nothing runs: each variable here would
// otherwise run the workspace's evil.sh (or load its code), which leaves a
// mark.
func TestEnvRefusedBeforeRunning(t *testing.T) {
	root := t.TempDir()
	mark := filepath.Join(root, "mark")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "evil.sh"), []byte("#!/bin/sh\ntouch "+mark+"\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "evil.py"), []byte("open('"+mark+"', 'w')\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "sitecustomize.py"), []byte("open('"+mark+"', 'w')\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "evil.js"), []byte("require('fs').writeFileSync('"+mark+"', '')\n"), 0o644))
	must(os.Mkdir(filepath.Join(root, "bin"), 0o755))
	must(os.Symlink("../evil.sh", filepath.Join(root, "bin", "ls")))
	o, err := Options{Root: root}.withDefaults()
	must(err)
	s := &set{opts: o}
	cases := []struct {
		cmd string
		env map[string]string
	}{
		{"ls", map[string]string{"BASH_ENV": root + "/evil.sh"}},
		{"bash -c true", map[string]string{"BASH_ENV": root + "/evil.sh"}},
		{"sh -i -c true", map[string]string{"ENV": root + "/evil.sh"}},
		{"ls", map[string]string{"PATH": root + "/bin:/usr/bin:/bin"}},
		{"python3 -c pass", map[string]string{"PYTHONSTARTUP": root + "/evil.py", "PYTHONINSPECT": "1"}},
		{"python3 -c pass", map[string]string{"PYTHONPATH": root}},
		{"python3 -c 'breakpoint()'", map[string]string{"PYTHONBREAKPOINT": "os.system"}},
		{"node -e 0", map[string]string{"NODE_OPTIONS": "--require " + root + "/evil.js"}},
		{"git status", map[string]string{"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor", "GIT_CONFIG_VALUE_0": root + "/evil.sh"}},
		{"git -C /tmp ls-remote x:y", map[string]string{"GIT_SSH_COMMAND": root + "/evil.sh"}},
		{"bash -xc true", map[string]string{"PS4": "$(" + root + "/evil.sh)"}},
		{"bash -c ls", map[string]string{"BASH_FUNC_ls%%": "() { " + root + "/evil.sh; }"}},
		{"bash -c true", map[string]string{"SHELLOPTS": "xtrace", "PS4": "$(" + root + "/evil.sh)"}},
		{"ls", map[string]string{"LD_PRELOAD": root + "/evil.so"}},
		{"ls", map[string]string{"HOME": root}},
		{"ls", map[string]string{"ASAN_OPTIONS": "external_symbolizer_path=" + root + "/evil.sh"}},
		{"ls", map[string]string{"https_proxy": "http://127.0.0.1:1"}},
		{"ls", map[string]string{"CONFIG_SITE": root + "/evil.sh"}},
		{"ls", map[string]string{"HGEDITOR": root + "/evil.sh"}},
	}
	for _, c := range cases {
		r, err := s.executeCommand(context.Background(), CommandInput{Command: c.cmd, Env: c.env})
		if err != nil {
			t.Fatal(err)
		}
		if r.Error == nil || r.Error.Type != tool.InvalidArguments {
			t.Errorf("%s %v: not refused: %+v", c.cmd, c.env, r.Error)
			continue
		}
		named := false
		for k := range c.env {
			named = named || strings.Contains(r.Error.Message, k)
		}
		if !named {
			t.Errorf("%s %v: the message names no variable: %s", c.cmd, c.env, r.Error.Message)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("%s %v: ran", c.cmd, c.env)
		}
	}
	// The threat is real: the same variable from the operator (trusted,
	// not checked) runs the workspace's script.
	o.Env = []string{"BASH_ENV=" + root + "/evil.sh"}
	if r, err := (&set{opts: o}).executeCommand(context.Background(), CommandInput{Argv: []string{"bash", "-c", "true"}}); err != nil || r.Error != nil {
		t.Fatalf("operator's BASH_ENV: %+v %v", r.Error, err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("BASH_ENV did not run the script: %v", err)
	}
	// A plain variable reaches the command.
	r, err := s.executeCommand(context.Background(), CommandInput{Command: `echo "$GREETING"`, Env: map[string]string{"GREETING": "hello"}})
	if err != nil || r.Error != nil || r.Structured.(Output).Stdout != "hello\n" {
		t.Fatalf("plain variable: %+v %v", r, err)
	}
}
