// Package exec is toolgate's built-in command tool set: execute_command
// (a shell line or an argv, a working folder, a timeout, extra environment)
// and run_code (python, node or bash source). Both are level 2 and always
// run in a sandbox (package sandbox; the native Linux backend by default):
// there is no unconfined path.
//
// With Options.Processes (a Processes registry) it also offers the process
// tools: start_process, read_process, write_process, stop_process and
// list_processes (proctools.go; docs/processes.md): long-running and
// interactive processes of an owner (principal and session or
// conversation), their output kept in a ring with byte cursors, in one pod
// per owner whose loopback the owner's commands share, every end with a
// reason. Given a ProcessLimits.Board (the replicas' state.redis), the
// replicas tell each other of their processes under a lease (procboard.go):
// another replica answers read_process and list_processes from it, and a
// process whose replica's lease lapsed is lost.
//
// Before anything runs, a dangerous-command check (CheckShell, CheckArgv)
// parses the line with mvdan.cc/sh/v3 as bash would, and looks at every
// simple command in it, through quotes, escapes, line continuations,
// $(…), <(…), subshells, pipes, && and ;, function bodies and wrappers
// (sudo, env, nice, timeout, nohup, xargs, sh -c, eval, find -exec…):
//
//   - the hard list never runs (Deny): disk wipes (dd of=/dev/sd*, mkfs,
//     writes to disk devices), rm -r of / or of system and home folders
//     (also --no-preserve-root), fork bombs, shutdown/reboot/halt/poweroff,
//     recursive chmod/chown of system folders, a download piped or
//     substituted into an interpreter, a line that cannot be parsed or holds
//     more than 50 commands (fail closed);
//   - the dangerous list asks (Ask): git reset --hard, push --force and
//     similar, credential and system-secret paths (~/.ssh, /etc/shadow,
//     /root, cloud credentials…), writes to /proc and /sys, setuid bits,
//     sudo, options that run other programs (rg --pre, sort
//     --compress-program, tar --to-command, git -c), command names or
//     scripts computed at run time, data piped into a shell;
//   - mass deletion asks (Ask, "removes many files: …", mass.go): find
//     -delete and find -exec rm, filtered or not; xargs, parallel or a
//     shell loop running rm, unlink, shred, truncate…; rm of a glob, of a
//     brace expansion of many names or of $(…); rm -r of any folder tree
//     (rimraf too); git clean -f or -i, git rm -r, git checkout or restore
//     of a whole tree; rsync --delete, rclone sync; mv of a folder or of
//     many files out of the workspace; tar --remove-files, zip -m, 7z
//     -sdel; emptying many files (: > "$f" in a loop or find -exec, tee,
//     cp /dev/null, sed -i d over a glob); and in code (CheckCode:
//     run_code, python -c, node -e…) a folder-tree routine (rmtree, rmSync
//     recursive, rm_rf, RemoveAll), a file removal with a computed argument
//     in code that lists folders or loops, and a command passed as
//     literals to subprocess, system, execSync or spawn. One or a few
//     named files do not ask, nor does rm -r, rimraf or mv away of a
//     folder a build or package manager makes again, named literally as a
//     relative path (node_modules, dist, build, target, out, .venv,
//     __pycache__, coverage, .next…; not bin, vendor, .terraform), nor a
//     dry run (git clean -n, rsync -n) — parsed as git and rsync parse
//     their options, so a value (git clean -e -n), an operand after --,
//     a computed word or an unknown option is no dry run. An in-place
//     edit (sed -i s/…/, perl -pi) does not ask.
//
// Quoted prose is an argument, not a command: `echo "rm -rf /"` runs.
//
// The call's env is checked too (env.go): neither the check nor a human
// approving a command sees the environment, so a variable that makes the
// loader, a shell, an interpreter, a build tool or git load code or run a
// program is refused with invalid_arguments naming it and why: LD_*,
// DYLD_*, GLIBC_TUNABLES and glibc's other unsecure variables, BASH_ENV,
// ENV, BASH_FUNC_*, BASH_LOADABLES_PATH, PS4, PYTHONPATH, PYTHONSTARTUP,
// NODE_OPTIONS, npm_execpath, PNPM_*, PERL5OPT, RUBYOPT, RUBYGEMS_GEMDEPS,
// JAVA_TOOL_OPTIONS, CC, CFLAGS, CGO_*, CONFIG_SITE, RUSTC_WRAPPER,
// CARGO_*, GOFLAGS, GOPROXY, GIT_* (but author, committer and CA
// certificates), HG*, EDITOR, PAGER, LESSOPEN, browsers' binaries
// (PUPPETEER_*, CHROME_BIN…), modules a library loads (*SAN_OPTIONS,
// GTK_MODULES, QT_PLUGIN_PATH, GIO_EXTRA_MODULES…), and what the sandbox
// sets (PATH, HOME, TMPDIR, XDG_*, the cache folders, the proxy variables).
// Such settings belong on the command line, where the check sees them. The
// list follows sudo's, glibc's and agent sandboxes' and is compared in upper
// case; a rule is a name, a prefix (NAME_*) or a suffix (*_OPTIONS). A name
// that is not a plain identifier, a
// value with a NUL byte or starting with "()" (an exported shell function)
// and a path as a locale or TERM are refused as well. Options.Env, the
// operator's, is not checked.
//
// Outside the workspace, /tmp and /dev/shm the sandbox is read-only, the
// home folder included (caches go to /tmp): a write there fails with
// EROFS, and the call ends as below. Inside the workspace, the entries
// something outside acts on later (the policy's config paths at its top:
// .git, .vscode, .claude, AGENTS.md, .github/copilot-instructions.md…,
// and toolgate's own files, Options.Protect) are guarded (protect.go):
// read-only when they exist, the folders above them unrenamable, and
// removed again when a command creates one that was missing. The
// configuration a program reads in a folder directly below the top (a
// package's .npmrc, a virtual environment's pip.conf), or in a package
// folder the workspace declares at any depth (policy.NestedConfigPaths;
// where such a folder is a link inside the workspace, in the folder it
// leads to, the link kept as it was), is compared after the command with
// what it was, by content, no folder pinned: one created is removed, one
// changed or removed is put back.
//
// Network: none, unless Options.Egress gives an egress proxy (package
// sandbox/egress). Then each command reaches that proxy, served in this
// process (no port is opened), at HTTP_PROXY and HTTPS_PROXY (and the
// lower-case and ALL_PROXY forms; NO_PROXY empty) inside the sandbox, and
// nothing else: curl, wget, git, pip, npm, go and Python's urllib reach the
// allowed hosts through it, and Node.js's fetch from 22.21 and 24 on
// (NODE_USE_ENV_PROXY is set; older versions ignore the proxy variables and
// so reach nothing). A program that ignores the proxy fails to resolve or
// reach any host by itself: its result carries a hint (Output.Hint) that
// only the proxy leads out. The proxy refusing a connection, or failing to
// make one, while the command runs is recorded for that command alone.
//
// How a call ends:
//
//   - The command created a guarded entry that was missing, or changed one
//     reached through a link or a nested configuration file →
//     "sandbox_violation" naming them, with Details["paths"], ["removed"]
//     (what was taken away again) and ["restored"] (what was put back as
//     it was), whatever the exit code.
//   - Deny: a *tool.Error of type permission_denied with
//     Details["hard_deny"]=true and Details["reason"]. Never retried.
//   - Ask: a *tool.Error of type permission_denied with
//     Details["needs_approval"]=true, Details["reason"] and
//     Details["command"]. The policy layer may ask a human; on yes it calls
//     again with a context from Approved(ctx), and the command runs.
//   - The sandbox stopped the command: timeout → error "timeout" (the whole
//     process tree is killed); the memory, processes, output or CPU limit →
//     "sandbox_violation" with Details["limit"]; a system call the sandbox
//     refused (network when there is none, ptrace, mount, raw sockets…) →
//     "sandbox_violation" with Details["blocked"] (not an inet6 socket
//     the command got over: an IPv6 probe); a write the read-only
//     file system refused (/etc/x, ~/.gitconfig, a protected .git file) →
//     "sandbox_violation" naming the path, with Details["path"] and
//     ["evidence"]; even if the command went on to exit 0, when the message
//     names a path outside the workspace or a guarded one (a test suite's
//     own EROFS messages are not a violation). The output so far is
//     attached (Structured and the text).
//   - The egress proxy refused a connection of the command (a host not on
//     the allow-list, a port, an IP literal, a name resolving to a private,
//     loopback or metadata address, a TLS server name other than the
//     CONNECT host) → "permission_denied" naming the host and the rule,
//     with Details["domain"], ["egress_reason"], ["rule"], ["allowed"];
//     the proxy cut a connection at a limit → "sandbox_violation" with
//     Details["limit"]="network"; a name that did not resolve or a server
//     that did not answer → "unavailable", retryable, as http_request
//     reports them. Whatever the exit code (curl prints a refused plain-HTTP
//     request's 403 and exits 0); every such connection is listed in
//     Output.EgressFailures.
//   - Otherwise the command ran: the result carries exit_code, stdout,
//     stderr (each capped, the middle cut with a mark), truncation,
//     duration, the backend and the protections that held (Structured, and
//     Meta["protections"]). A non-zero exit is a result, not an error, as
//     a terminal shows it (Options.ErrorOnExit changes that).
package exec
