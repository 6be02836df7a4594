package exec

import (
	"strings"
	"testing"
)

// wrapped returns line as the wrappers, chains and subshells an agent may
// put around it; each must get the same verdict as the line alone.
func wrapped(line string) []string {
	q := strings.ReplaceAll(line, `'`, `'\''`)
	all := []string{
		line,
		"time " + line,
		"bash -c '" + q + "'",
		"sh -c '" + q + "'",
		"bash -lc '" + q + "'",
		"eval '" + q + "'",
		"cd src && " + line,
		"true; " + line,
		"ls || " + line,
		"(" + line + ")",
		"{ " + line + "; }",
		"echo $(" + line + ")",
		"if true; then " + line + "; fi",
	}
	if strings.HasPrefix(line, "for ") || strings.HasPrefix(line, "while ") {
		return all // a compound command: no program runs it
	}
	for _, w := range []string{"env", "env FOO=1", "command", "nice -n 5", "timeout 5", "nohup", "stdbuf -oL"} {
		all = append(all, w+" "+line)
	}
	return all
}

func TestMassDeletionAsks(t *testing.T) {
	lines := []string{
		// find -delete, with or without filters, from any start.
		"find . -delete",
		"find -delete",
		"find . -type f -delete",
		"find . -name '*.log' -delete",
		"find . -iname \"*.TMP\" -type f -delete",
		"find src -name '*.o' -delete",
		"find build/ -mtime +7 -delete",
		"find ./dist -mindepth 1 -delete",
		"find /tmp/ws -delete",
		"find -L . -name x -delete",
		"find . -path './node_modules/*' -prune -o -name '*.js' -delete",
		"find . \\( -name '*.a' -o -name '*.b' \\) -delete",
		// find -exec/-execdir/-ok of a removal.
		"find . -exec rm {} \\;",
		"find . -exec rm -f {} +",
		"find . -name '*.tmp' -exec rm -f {} \\;",
		"find . -type f -exec rm -rf '{}' ';'",
		"find src -type f -execdir rm -- {} +",
		"find . -ok rm {} \\;",
		"find . -okdir rm {} \\;",
		"find . -type f -exec /bin/rm {} +",
		"find . -exec unlink {} \\;",
		"find . -type f -exec shred -u {} \\;",
		"find . -type d -empty -exec rmdir {} +",
		"find . -type f -exec truncate -s 0 {} +",
		"find . -exec sh -c 'rm \"$1\"' _ {} \\;",
		"find . -exec bash -c 'for f; do rm -f \"$f\"; done' _ {} +",
		"find . -name '*.bak' -exec env rm {} \\;",
		"find . -exec git rm -q {} +",
		"find . -exec mv {} /tmp/ \\;",
		"find . -type f -exec python3 -c 'import os,sys; os.remove(sys.argv[1])' {} \\;",
		"find . -exec perl -e 'unlink @ARGV' {} +",
		"fd -e log -x rm",
		"fd . --exec-batch rm -f",
		// xargs, parallel.
		"ls | xargs rm",
		"ls *.log | xargs rm -f",
		"find . -name '*.pyc' | xargs rm",
		"find . -print0 | xargs -0 rm -f",
		"find . -type f -print0 | xargs -0 -n 10 rm --",
		"printf '%s\\n' a b c | xargs rm",
		"git ls-files -z | xargs -0 rm",
		"cat list.txt | xargs -I{} rm {}",
		"xargs -a list.txt rm",
		"ls | xargs -I{} sh -c 'rm {}'",
		"ls | xargs shred -u",
		"ls | xargs -n1 unlink",
		"ls | nice xargs rm",
		"ls | parallel rm",
		"parallel rm ::: a b c",
		"ls | xargs mv -t /tmp",
		// rm of a glob, a brace expansion, names computed at run time.
		"rm *.log",
		"rm -f *.o",
		"rm -f src/*",
		"rm -- *",
		"rm -f -- *.tmp",
		"rm **/*.tmp",
		"rm -f ./build/*.js",
		"rm file?.txt",
		"rm data[0-9].csv",
		"rm {a,b,c}*",
		"rm -f file{1..100}.txt",
		"rm -f {a,b,c,d,e,f}.txt",
		"rm log.{1..9}",
		"rm -f x{a..z}",
		"rm $(ls)",
		"rm -f $(find . -name '*.tmp')",
		"rm `ls`",
		"rm \"$(cat list.txt)\"",
		"rm -f $FILES",
		"rm -f \"${files[@]}\"",
		"rm \"$@\"",
		"rm -f \"$dir\"/*",
		"rm !(keep.txt)",
		"/bin/rm -f *.log",
		"\\rm *.log",
		"r''m *.log",
		"shred -u *.log",
		"shred -n 3 -u -z secrets/*",
		"unlink *",
		"truncate -s 0 *.log",
		"truncate --size 0 logs/*",
		"srm -r *",
		"trash-put *",
		// rm -r of a folder tree.
		"rm -r docs",
		"rm -rf build dist src",
		"rm -rf node_modules lib",
		"rm -rf src/",
		"rm -R ./data",
		"rm --recursive --force lib",
		"rm -r -f tmp",
		"rm -fr .git",
		"rm -rf -- assets",
		"rm -rf .",
		"rm -rf ./*",
		"rm -fr *",
		"rm -r .*",
		// Loops.
		"for f in *.log; do rm \"$f\"; done",
		"for f in $(ls); do rm -f \"$f\"; done",
		"for f in *; do rm -- \"$f\"; done",
		"for i in {1..50}; do rm -f \"file$i\"; done",
		"for ((i=0; i<100; i++)); do rm -f \"f$i\"; done",
		"ls | while read f; do rm \"$f\"; done",
		"find . -name '*.tmp' | while read -r f; do rm -f \"$f\"; done",
		"while read f; do unlink \"$f\"; done < list.txt",
		"for f in src/*.c; do truncate -s0 \"$f\"; done",
		"for f in *; do mv \"$f\" /tmp/; done",
		// git.
		"git clean -fdx",
		"git clean -f",
		"git clean -xdf",
		"git clean -dfx",
		"git clean -d -f -x",
		"git clean --force -d",
		"git clean -ffdx",
		"git clean -fX",
		"git -C sub clean -fdx",
		"git --work-tree=. clean -fd",
		"git rm -r src",
		"git rm -rf .",
		"git rm -r --quiet docs/",
		"git rm '*.log'",
		"git rm -f *.txt",
		"git rm -- .",
		"git checkout -- .",
		"git checkout .",
		"git checkout HEAD -- src/",
		"git checkout -f",
		"git checkout --force main",
		"git restore .",
		"git restore --worktree .",
		"git restore -s HEAD~3 -- .",
		"git restore --staged --worktree .",
		"git restore ':/'",
		"git restore '*.go'",
		"git switch -f main",
		"git switch --discard-changes main",
		"git reset --hard",
		// rsync and rclone.
		"rsync -a --delete src/ backup/",
		"rsync -av --delete ../upstream/ .",
		"rsync -a --delete-after src/ dst/",
		"rsync -a --delete-before src/ dst/",
		"rsync -a --delete-during src/ dst/",
		"rsync -a --delete-delay src/ dst/",
		"rsync -a --del src/ dst/",
		"rsync -a --delete-excluded --exclude '*.o' src/ dst/",
		"rsync -a --remove-source-files src/ dst/",
		"rsync --archive --delete --verbose /srv/data/ ./data/",
		"rclone sync src remote:dst",
		"rclone purge remote:bucket",
		"rsync -a --delete --exclude .git /tmp/empty/ ./",
		// rimraf is rm -r by another name.
		"rimraf src",
		"npx rimraf app",
		"npx -y rimraf public",
		"rimraf 'dist/**'",
		// More spellings seen in the wild.
		"busybox find . -delete",
		"busybox rm *.log",
		"find . -depth -exec rm -rf {} \\;",
		"find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +",
		"find . -type f -name '*.log' -exec rm -- '{}' \\+",
		"find . -name '*.tmp' -print0 | xargs -0 /usr/bin/rm -f",
		"git ls-files --others --exclude-standard | xargs rm",
		"ls | grep log | xargs -r rm",
		"xargs rm < files.txt",
		"rm -rf $(git ls-files -o)",
		"rm -rf */",
		"rm -rf .[^.]*",
		"rm -rf \"${dir:?}\"/*",
		"yes | rm -ri *",
		"shopt -s globstar; rm -f **/*.bak",
		"git clean -fdxq",
		"git clean -x -f",
		"git checkout stash@{0} -- .",
		"git checkout -- '*.py'",
		"truncate -s 0 $(find . -name '*.log')",
		// mv of many files out of the workspace.
		"mv * /tmp",
		"mv ./* ../",
		"mv -t /tmp *.log",
		"mv src/* /tmp/trash/",
		"mv . /tmp/x",
		"mv $(ls) /tmp",
		// Interpreters on the command line.
		`python3 -c "import shutil; shutil.rmtree('build')"`,
		`python3 -c "import os, glob; [os.remove(f) for f in glob.glob('*.log')]"`,
		`python3 -c "import os; [os.unlink(f) for f in os.listdir('.')]"`,
		`python -c "import pathlib; [p.unlink() for p in pathlib.Path('.').rglob('*.tmp')]"`,
		`python3 -c "import subprocess; subprocess.run(['rm', '-rf', 'src'])"`,
		`python3 -c "import os; os.system('rm -f *.log')"`,
		`python3 -c "import subprocess; subprocess.run('find . -delete', shell=True)"`,
		`node -e "require('fs').rmSync('dist', {recursive: true, force: true})"`,
		`node -e "const fs=require('fs'); fs.readdirSync('.').forEach(f => fs.unlinkSync(f))"`,
		`node -e "require('child_process').execSync('rm -rf lib')"`,
		`node -e "require('child_process').spawnSync('rm', ['-rf', 'lib'])"`,
		`perl -e 'unlink glob("*.log")'`,
		`perl -e 'unlink <*.tmp>'`,
		`perl -MFile::Path=remove_tree -e 'remove_tree("build")'`,
		`find . -name '*.tmp' | perl -nle unlink`,
		`ls | perl -ne 'chomp; unlink'`,
		`ruby -e 'require "fileutils"; FileUtils.rm_rf("tmp")'`,
		`ruby -e 'Dir.glob("*.log").each { |f| File.delete(f) }'`,
		`ruby -e 'File.delete(*Dir["*.tmp"])'`,
		`ruby -rfileutils -e 'FileUtils.rm(Dir.glob("*.o"))'`,
	}
	for _, line := range lines {
		for _, l := range wrapped(line) {
			f := CheckShell(l)
			if f.Verdict != Ask {
				t.Errorf("%q: %s (%s), want ask", l, f.Verdict, f.Reason)
			}
		}
	}
}

func TestMassDeletionReasonNamesTheClass(t *testing.T) {
	for line, want := range map[string]string{
		"find . -name '*.o' -delete":   "removes many files: find -delete",
		"find . -exec rm {} +":         "removes many files: find -exec runs rm",
		"ls | xargs rm":                "removes many files: xargs runs rm",
		"rm *.log":                     "removes many files: rm over a glob (*.log)",
		"rm -f f{1..100}":              "brace expansion of 100 names",
		"rm $(ls)":                     "removes many files: rm of names computed",
		"rm -r src":                    "removes many files: rm -r removes the whole folder tree src",
		"git clean -fdx":               "removes many files: git clean",
		"rsync -a --delete a/ b/":      "removes many files: rsync --delete",
		`for f in *; do rm "$f"; done`: "removes many files: a loop runs rm",
		"truncate -s0 *.log":           "empties many files",
		"mv * /tmp":                    "moves many files out of the workspace",
		"git checkout -- .":            "discards uncommitted changes to many files",
		`python3 -c "import shutil; shutil.rmtree('b')"`: "removes many files: the code removes folder trees (rmtree)",
	} {
		if f := CheckShell(line); f.Verdict != Ask || !strings.Contains(f.Reason, want) {
			t.Errorf("%q: %s (%s), want ask with %q", line, f.Verdict, f.Reason, want)
		}
	}
}

func TestMassDeletionControlsRun(t *testing.T) {
	lines := []string{
		// find that lists, or runs something harmless.
		"find . -name x -print",
		"find . -name '*.go'",
		"find . -type f -newer go.mod",
		"find . -name '*.log' -print0",
		"find . -type f | wc -l",
		"find . -exec grep -l TODO {} +",
		"find . -name '*.go' -exec gofmt -l {} \\;",
		"find . -type f -exec cat {} \\;",
		"find . -type f -exec ls -la {} +",
		"find . -exec echo rm {} \\;",
		"find . -type f -exec mv {} archive/ \\;",
		"fd -e go -x wc -l",
		// One or a few named files.
		"rm one.txt",
		"rm a b",
		"rm a.txt b.txt c.txt",
		"rm -f notes.txt",
		"rm -f -- -weird-name",
		"rm ./build/out.o",
		"rm {a,b}.txt",
		"rm -f log.{1,2,3}",
		"rm \"$tmpfile\"",
		"rm -f \"$1\"",
		"unlink one.txt",
		"shred -u secret.txt",
		"truncate -s 0 app.log",
		"rmdir emptydir",
		"rm -d emptydir",
		"for f in a.txt b.txt; do rm \"$f\"; done",
		"for f in *.log; do echo \"$f\"; done",
		"while read l; do echo \"$l\"; done < list.txt",
		"ls | xargs echo",
		"ls | xargs -n1 wc -l",
		"ls | xargs grep TODO",
		// git that keeps work.
		"git clean -n",
		"git clean -nd",
		"git clean --dry-run -fdx",
		"git clean -fdn",
		"git rm notes.txt",
		"git rm --cached -r .",
		"git rm -n -r src",
		"git checkout main",
		"git checkout -b feature/x",
		"git checkout -- main.go",
		"git restore main.go",
		"git restore --staged .",
		"git stash",
		"git switch main",
		"git status; git diff",
		// rsync, rclone, mv and cp that delete nothing.
		"rsync -a src/ dst/",
		"rsync -av --delay-updates src/ dst/",
		"rsync -a --exclude '*.o' src/ backup/",
		"rclone copy src remote:dst",
		"rclone ls remote:bucket",
		"rsync -an --delete src/ dst/",
		"rsync -a --delete --dry-run src/ dst/",
		"npx prettier --check .",
		"busybox ls -la",
		"mv *.txt archive/",
		"mv a.txt /tmp/a.txt",
		"mv build old-build",
		"cp -r src backup",
		"cp *.txt /tmp/",
		// Prose.
		"echo 'rm -rf build'",
		"echo \"find . -delete\" > notes.md",
		"git commit -m 'rm *.log before release'",
		"grep -rn 'shutil.rmtree' .",
		// Interpreter code that removes one named file, or only lists.
		`python3 -c "import os; os.remove('one.txt')"`,
		`python3 -c "import os; print(os.listdir('.'))"`,
		`python3 -c "for i in range(3): print(i)"`,
		`python3 -c "import glob; print(glob.glob('*.py'))"`,
		`python3 -c "print('delete all the things')"`,
		`python3 -c "import pathlib; pathlib.Path('a.txt').unlink()"`,
		`python3 -c "import subprocess; subprocess.run(['ls', '-la'])"`,
		`python3 -c "import subprocess; subprocess.run(['rm', 'one.txt'])"`,
		`node -e "require('fs').unlinkSync('x')"`,
		`node -e "require('fs').readdirSync('.').forEach(f => console.log(f))"`,
		`node -e "require('fs').rmSync('a.txt')"`,
		`perl -e 'unlink "a.txt"'`,
		`perl -ne 'print if /x/' file.txt`,
		`ruby -e 'File.delete("a.txt")'`,
		`ruby -e 'Dir.glob("*.rb").each { |f| puts f }'`,
	}
	for _, line := range lines {
		for _, l := range wrapped(line) {
			if f := CheckShell(l); f.Verdict != Allow {
				t.Errorf("%q: %s (%s), want allow", l, f.Verdict, f.Reason)
			}
		}
	}
}

func TestMassDeletionInCode(t *testing.T) {
	cases := []struct {
		code string
		want Verdict
	}{
		// Python.
		{"import shutil\nshutil.rmtree('build')", Ask},
		{"import shutil, os\nfor e in os.listdir('.'):\n    shutil.rmtree(e, ignore_errors=True)", Ask},
		{"import os\nfor f in os.listdir('.'):\n    os.remove(f)", Ask},
		{"import os, glob\nfor f in glob.glob('**/*.tmp', recursive=True):\n    os.unlink(f)", Ask},
		{"import glob, os\nlist(map(os.remove, glob.glob('*.log')))", Ask},
		{"import os\nfor root, dirs, files in os.walk('.'):\n    for f in files:\n        os.remove(os.path.join(root, f))", Ask},
		{"from pathlib import Path\nfor p in Path('.').rglob('*'):\n    if p.is_file(): p.unlink()", Ask},
		{"from pathlib import Path\n[p.unlink(missing_ok=True) for p in Path('logs').iterdir()]", Ask},
		{"import os\nwith os.scandir('.') as it:\n    for e in it: os.unlink(e.path)", Ask},
		{"import os\nfor i in range(100):\n    os.remove(f'file{i}.txt')", Ask},
		{"import os\nos.removedirs('a/b/c')", Ask},
		{"import subprocess\nsubprocess.run(['rm', '-rf', 'src'])", Ask},
		{"import subprocess\nsubprocess.run(['rm', '-f'] + files)", Ask},
		{"import subprocess\nsubprocess.run(['rm', '-f', *files])", Ask},
		{"import subprocess\nsubprocess.call(['find', '.', '-name', '*.o', '-delete'])", Ask},
		{"import subprocess\nsubprocess.run('rm -rf src', shell=True)", Ask},
		{"import subprocess\nsubprocess.Popen(\"git clean -fdx\", shell=True)", Ask},
		{"import subprocess\nsubprocess.check_call(['git', 'clean', '-fdx'])", Ask},
		{"import subprocess\nsubprocess.run(['rsync', '-a', '--delete', 'src/', 'dst/'])", Ask},
		{"import os\nos.system(f'rm -rf {d}')", Ask},
		{"import os\nos.system('rm -f *.log')", Ask},
		{"import os\nos.popen('find . -type f -delete').read()", Ask},
		// Node.
		{"require('fs').rmSync('dist', { recursive: true, force: true })", Ask},
		{"const fs = require('fs'); const path = require('path');\nfs.rmSync(path.join(__dirname, 'out'), {\n  recursive: true,\n})", Ask},
		{"const fs = require('fs/promises'); await fs.rm('build', { recursive: true })", Ask},
		{"require('fs').rmdirSync('x', {recursive: true})", Ask},
		{"const fs = require('fs');\nfor (const f of fs.readdirSync('.')) fs.unlinkSync(f);", Ask},
		{"const fs = require('fs');\nfs.readdirSync('logs').forEach(f => fs.unlinkSync('logs/' + f));", Ask},
		{"const fs = require('fs');\nfs.readdirSync('.').map(fs.unlinkSync)", Ask},
		{"const fs = require('fs');\nfor (const f of fs.readdirSync('.')) fs.rmSync(f, {force: true});", Ask},
		{"const rimraf = require('rimraf'); rimraf.sync('node_modules')", Ask},
		{"const { deleteSync } = require('del'); deleteSync(['dist/**'])", Ask},
		{"require('fs-extra').removeSync('build')", Ask},
		{"require('fs-extra').emptyDirSync('out')", Ask},
		{"require('child_process').execSync('rm -rf app')", Ask},
		{"require('child_process').execSync(`rm -rf ${dir}`)", Ask},
		{"const { spawnSync } = require('child_process'); spawnSync('rm', ['-rf', 'src'], { stdio: 'inherit' })", Ask},
		{"require('child_process').execFileSync('find', ['.', '-delete'])", Ask},
		{"require('child_process').exec('git clean -fdx', (e, out) => console.log(out))", Ask},
		// Perl, Ruby, Go.
		{"unlink glob('*.log');", Ask},
		{"opendir(my $d, '.'); unlink grep { -f } readdir $d;", Ask},
		{"use File::Path qw(rmtree); rmtree('build');", Ask},
		{"system('rm', '-rf', $dir);", Ask},
		{"my $out = qx{rm -rf src};", Ask},
		{"require 'fileutils'; FileUtils.rm_r('tmp')", Ask},
		{"Dir['*.log'].each { |f| File.unlink(f) }", Ask},
		{"Dir.children('.').each { |f| FileUtils.rm_f(f) }", Ask},
		{"%x(rm -rf src)", Ask},
		{"os.RemoveAll(dir)", Ask},
		{"exec.Command(\"rm\", \"-rf\", dir).Run()", Ask},
		{"exec.Command(\"rm\", files...).Run()", Ask},
		{"import os\nd = 'logs'\n[os.remove(os.path.join(d, f)) for f in os.listdir(d)]", Ask},
		{"from pathlib import Path\nlist(map(Path.unlink, Path('.').glob('*.txt')))", Ask},
		{"import os, glob\nfor f in glob.glob('*'):\n    if os.path.isfile(f):\n        os.remove(f)", Ask},
		{"import subprocess\nsubprocess.run(['git', 'clean', '-fdx'], check=True)", Ask},
		{"import subprocess\nsubprocess.run('rsync -a --delete empty/ ./', shell=True)", Ask},
		{"import os\nos.system(\"find . -name '*.pyc' -delete\")", Ask},
		{"const fs = require('fs');\nfs.readdirSync('.').forEach(f => fs.rmSync(f, {recursive: true, force: true}));", Ask},
		{"const fsp = require('fs/promises');\nawait Promise.all((await fsp.readdir('.')).map(f => fsp.unlink(f)));", Ask},
		{"import { rm } from 'fs/promises';\nawait rm('dist', { recursive: true });", Ask},
		{"require('fs').readdir('.', (e, names) => names.forEach(n => require('fs').unlink(n, () => {})))", Ask},
		// Controls: one named file, listing only, prose.
		{"import os\nos.remove('one.txt')", Allow},
		{"import os\nos.unlink(\"a.txt\")", Allow},
		{"import os\ntmp = 'x.txt'\nopen(tmp, 'w').write('a')\nos.remove(tmp)", Allow},
		{"from pathlib import Path\nPath('a.txt').unlink()", Allow},
		{"import os\nprint(sorted(os.listdir('.')))", Allow},
		{"import os\nfor f in os.listdir('.'):\n    print(f, os.path.getsize(f))", Allow},
		{"items = [1, 2, 3]\nfor x in list(items):\n    items.remove(x)", Allow},
		{"print('to delete everything, run rm -rf build')", Allow},
		{"print('for f in files: os.remove(f)')", Allow},
		{"d = {'delete': True, 'unlink': False}\nfor k in d: print(k)", Allow},
		{"import subprocess\nsubprocess.run(['git', 'status'])", Allow},
		{"import subprocess\nsubprocess.run('ls -la', shell=True)", Allow},
		{"import subprocess\nsubprocess.run(['rm', 'one.txt'])", Allow},
		{"import asyncio\nasyncio.run(main())", Allow},
		{"app.run(host='0.0.0.0', port=8000)", Allow},
		{"require('fs').unlinkSync('x')", Allow},
		{"require('fs').rmSync('a.txt', { force: true })", Allow},
		{"require('fs').rmSync('dir', { recursive: false })", Allow},
		{"require('fs').rmSync('a.txt')\nconst opts = { recursive: true }\nmkdirSync('x', opts)", Allow},
		{"const fs = require('fs');\nfor (const f of fs.readdirSync('.')) console.log(f);", Allow},
		{"const m = new Map(); for (const k of ['a']) m.delete(k);", Allow},
		{"require('child_process').execSync('git status')", Allow},
		{"unlink 'a.txt';", Allow},
		{"File.delete('a.txt')", Allow},
		{"Dir.glob('*.rb').each { |f| puts f }", Allow},
		{"console.log(`rm -rf ${dir}`)", Allow},
	}
	for _, c := range cases {
		if f := CheckCode(c.code); f.Verdict != c.want {
			t.Errorf("%q: %s (%s), want %s", c.code, f.Verdict, f.Reason, c.want)
		}
	}
}

func TestMassDeletionArgv(t *testing.T) {
	cases := []struct {
		argv []string
		want Verdict
	}{
		{[]string{"find", ".", "-delete"}, Ask},
		{[]string{"find", ".", "-name", "*.o", "-exec", "rm", "{}", ";"}, Ask},
		{[]string{"git", "clean", "-fdx"}, Ask},
		{[]string{"rsync", "-a", "--delete", "a/", "b/"}, Ask},
		{[]string{"rm", "-r", "src"}, Ask},
		{[]string{"sh", "-c", "rm *.log"}, Ask},
		{[]string{"rm", "one.txt"}, Allow},
		{[]string{"find", ".", "-name", "*.o"}, Allow},
		{[]string{"git", "clean", "-n"}, Allow},
		{[]string{"rsync", "-a", "a/", "b/"}, Allow},
	}
	for _, c := range cases {
		if f := CheckArgv(c.argv); f.Verdict != c.want {
			t.Errorf("%q: %s (%s), want %s", c.argv, f.Verdict, f.Reason, c.want)
		}
	}
}

// TestCheckShellNestedLoops: a removal deep inside loops is seen, and only
// when a loop around it runs over many names (the check walks the line
// once, whatever the nesting).
func TestCheckShellNestedLoops(t *testing.T) {
	n := 3000
	for line, want := range map[string]Verdict{
		strings.Repeat("for a in *; do ", n) + "rm x" + strings.Repeat("; done", n):        Ask,
		strings.Repeat("for a in *; do ", n) + "echo x" + strings.Repeat("; done", n):      Allow,
		strings.Repeat("for a in a b; do ", n) + "rm \"$a\"" + strings.Repeat("; done", n): Allow,
	} {
		if f := CheckShell(line); f.Verdict != want {
			t.Errorf("%.40q…: %s (%s), want %s", line, f.Verdict, f.Reason, want)
		}
	}
}

func TestBraceNames(t *testing.T) {
	for s, want := range map[string]int{
		"a.txt": 1, "{a,b}": 2, "{a,b}{c,d}": 4, "f{1..100}": 100, "f{1..10..2}": 5, "{a..z}": 26, "{a,{b,c}}": 3,
		"x{1..3}y{a,b}": 6, "{}": 1, "{a}": 1, "{1..99999999999999}": veryMany, "{": 1, "a}": 1, "{0..-9}": 10,
		strings.Repeat("{a,", 100) + strings.Repeat("}", 100): veryMany,
	} {
		if got := braceNames(s); got != want {
			t.Errorf("braceNames(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzCheckCode(f *testing.F) {
	for _, s := range []string{"import os\nfor f in os.listdir('.'): os.remove(f)", "subprocess.run(['rm', '-rf', *x])",
		"spawnSync('rm', ['-rf', `${d}`], {a: 1})", "qx{rm *}", `'''`, `exec("\"`, "run([", "rmSync(x, {recursive: false})"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		CheckCode(code) // must not panic or hang
	})
}

func FuzzBraceNames(f *testing.F) {
	for _, s := range []string{"{a,b}", "f{1..9..2}", "{{a,b},{c,{d..f}}}", "{-9223372036854775808..9}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := braceNames(s); n < 1 || n > veryMany {
			t.Fatalf("braceNames(%q) = %d", s, n)
		}
	})
}

// TestRegenerableFolders: rm -r (and rimraf, mv away) of a folder a build
// or a package manager makes again runs when it is named literally, as a
// relative path; any other spelling, or another folder, asks.
// TestRegenerableAfterMove: a regenerable folder's name that the same line
// moves other files to is not regenerable any more (mv src build; rm -rf
// build); copying or making it is.
func TestRegenerableAfterMove(t *testing.T) {
	for name := range regenerable {
		for _, line := range []string{
			"mv src " + name + " && rm -rf " + name,
			"mv -f src " + name + "; rm -rf " + name,
			"mv -t " + name + " src lib && rm -r " + name,
			"git mv src " + name + " && rm -rf " + name,
			"mv src " + name + " && sh -c 'rm -rf " + name + "'",
			"sh -c 'mv src " + name + "' && rm -rf " + name,
			"rename 's/src/" + name + "/' src && rimraf " + name,
			"rm -rf " + name + " && mv src " + name + " && rm -rf " + name,
		} {
			for _, l := range wrapped(line) {
				if f := CheckShell(l); f.Verdict != Ask || !strings.Contains(f.Reason, "moved") {
					t.Errorf("%q: %s (%s), want ask", l, f.Verdict, f.Reason)
				}
			}
		}
		for _, line := range []string{
			"cp -r src " + name + " && rm -rf " + name,
			"mkdir -p " + name + " && rm -rf " + name,
			"ln -s src " + name + " && rm " + name,
			"mv " + name + " /tmp/old",
		} {
			for _, l := range wrapped(line) {
				if f := CheckShell(l); f.Verdict != Allow {
					t.Errorf("%q: %s (%s), want allow", l, f.Verdict, f.Reason)
				}
			}
		}
	}
}

func TestRegenerableFolders(t *testing.T) {
	for name := range regenerable {
		for _, line := range []string{
			"rm -rf " + name,
			"rm -r ./" + name,
			"rm -rf packages/web/" + name,
			"rm -fr ./a/b/" + name,
			"rm -rf \"" + name + "\"",
			"rm -rf -- " + name,
			"rm -rf " + name + " src/" + name,
			"rm --recursive --force " + name,
			"rimraf " + name,
			"npx rimraf " + name,
			"mv " + name + " /tmp/",
		} {
			for _, l := range wrapped(line) {
				if f := CheckShell(l); f.Verdict != Allow {
					t.Errorf("%q: %s (%s), want allow", l, f.Verdict, f.Reason)
				}
			}
		}
		for _, line := range []string{
			"rm -rf " + name + "/../src",
			"rm -rf " + name + "/..",
			"rm -rf " + name + "/.",
			"rm -rf " + name + "*",
			"rm -rf ./" + name + "*/",
			"rm -rf " + name + "/",
			"rm -rf " + name + "/*",
			"rm -rf /" + name,
			"rm -rf ../" + name,
			"rm -rf ~/" + name,
			"rm -rf \"$HOME/" + name + "\"",
			"rm -rf $D/" + name,
			"rm -rf \"$(echo " + name + ")\"",
			"rm -rf {" + name + ",src}",
			"rm -rf " + name + " src",
			"rm -rf x/" + name + "/../../lib",
			"rm -rf " + name + "_old",
			"rm -rf my" + name,
			"rimraf '" + name + "/**'",
			"mv " + name + "/ /tmp/",
			"find " + name + " -delete",
		} {
			for _, l := range wrapped(line) {
				if f := CheckShell(l); f.Verdict == Allow {
					t.Errorf("%q: allow, want ask", l)
				}
			}
		}
	}
	for _, name := range []string{"src", ".", "*", "bin", "vendor", ".terraform", "tmp", "lib", "app", "docs", ".git", "data", "node_module", "Build"} {
		for _, l := range wrapped("rm -rf " + name) {
			if f := CheckShell(l); f.Verdict == Allow {
				t.Errorf("%q: allow, want ask", l)
			}
		}
	}
}

// TestMassDeletionMoreSpellings: moving a folder tree away, archiving
// and deleting, and emptying many files by redirection, tee, cp /dev/null
// or sed -i d ask; the everyday forms of the same commands run.
func TestMassDeletionMoreSpellings(t *testing.T) {
	ask := []string{
		// A folder tree moved out of the workspace.
		"mv src /tmp/",
		"mv src /tmp",
		"mv src/ /tmp/x",
		"mv ./lib ../",
		"mv docs lib /tmp/",
		"mv -t /tmp src",
		"mv --target-directory=/tmp app",
		"mv -f src ~/trash/",
		"mv .git /tmp/g",
		"mv Makefile /dev/null",
		"mv \"$d\" /tmp/",
		"mv -- src /var/tmp/",
		// Archive and delete.
		"tar --remove-files -cf /tmp/x.tgz .",
		"tar -czf /tmp/x.tgz --remove-files src",
		"tar cf x.tar --remove src",
		"tar --remove-f -cf x.tar .",
		"zip -rm /tmp/x.zip .",
		"zip -mr x.zip src",
		"zip -r -m x.zip src",
		"zip -9m x.zip *.log",
		"zip --move -r x.zip .",
		"7z a -sdel x.7z src",
		"7za a -sdel /tmp/x.7z .",
		// Truncation over many names.
		"for f in *; do : > \"$f\"; done",
		"for f in *.log; do > \"$f\"; done",
		"for f in $(ls); do echo -n > $f; done",
		"for f in *; do true >| \"${f}\"; done",
		"for f in src/*; do cat /dev/null &> \"$f\"; done",
		"for f in *; do printf '' 2> \"$f\"; done",
		"ls | while read f; do : > \"$f\"; done",
		"while read -r f; do > \"$f\"; done < list.txt",
		"for f in *; do cp /dev/null \"$f\"; done",
		"for f in *; do echo | tee \"$f\"; done",
		"find . -exec sh -c ': > \"$1\"' _ {} \\;",
		"find . -type f -exec sh -c 'for f; do : > \"$f\"; done' _ {} +",
		"find . -type f -exec bash -c '> {}' \\;",
		"find . -exec cp /dev/null {} \\;",
		"find . -type f -exec dd if=/dev/null of={} \\;",
		"ls | xargs -I{} dd if=/dev/null of={}",
		"ls | xargs -I{} sh -c ': > {}'",
		"ls | xargs -n1 sh -c 'echo -n > \"$0\"'",
		"ls | xargs tee < /dev/null",
		"ls | xargs tee out.txt",
		"find . -exec tee {} \\; < /dev/null",
		"echo | tee *.log",
		"true | tee src/*",
		// sed deleting every line of many files.
		"sed -i d *",
		"sed -i '1,$d' *.txt",
		"sed -i -e '/.*/d' src/*",
		"sed -i.bak d *",
		"sed --in-place d $(ls)",
		"sed -i '/^/d' *.log",
		"sed -ni 'd;' *",
		"sed -i -- d *",
		"sed -ni d *",
		"sed -i -e 's/a/b/' -e d *",
		"sed -i -e d -- *.md",
		"sed --expression=d --in-place *",
		"sed -Ei '1,$ d' *.txt",
		"sed -i -s -e '/.*/ d;' src/*.c",
	}
	allow := []string{
		"mv a.txt /tmp/a.txt",
		"mv src/main.go /tmp/",
		"mv report.pdf ~/Downloads/",
		"mv .eslintrc.json /tmp/",
		"mv node_modules /tmp/nm",
		"mv src lib",
		"mv build old-build",
		"mv -t archive src",
		"tar -czf /tmp/x.tgz src",
		"tar xf x.tar",
		"tar -tf x.tar",
		"tar -cf x.tar --exclude=remove-files .",
		"zip -r x.zip src",
		"zip -d x.zip a.txt",
		"7z a x.7z src",
		"for f in *.md; do echo \"$f\" > list.txt; done",
		"for f in *.c; do gcc \"$f\" > \"$f.out\"; done",
		"for f in *; do cat \"$f\" >> all.txt; done",
		"for f in *; do wc -l \"$f\" > /dev/null; done",
		"for f in a b; do : > \"$f\"; done",
		": > \"$f\"",
		"> app.log",
		"find . -exec sh -c 'wc -l \"$1\" > /dev/null' _ {} \\;",
		"find . -name '*.c' -exec sh -c 'gcc -c \"$1\" 2> \"$1.err\"' _ {} \\;",
		"echo hi | tee out.txt",
		"for f in *.c; do gcc \"$f\" 2>&1 | tee build.log; done",
		"find . -name '*.c' -exec sh -c 'cc \"$1\" | tee -a log' _ {} \\;",
		"echo | tee -a *.log",
		"cp /dev/null app.log",
		"dd if=/dev/zero of=disk.img bs=1M count=10",
		"for f in *.iso; do dd if=\"$f\" of=/dev/null; done",
		"sed -i 's/a/b/' *.py",
		"sed -i '/TODO/d' *.go",
		"sed -i d one.txt",
		"sed -i '/.*/d' one.txt",
		"sed -n '1,$p' *.txt",
		"sed d *",
		"sed -ie 's/a/b/' *",
		"sed -i -f script.sed *",
		"sed -n d *",
		"perl -pi -e 's/foo/bar/' *.txt",
		"perl -pi -e 's/.*//' *", // an in-place edit: not flagged (mass.go)
	}
	for _, line := range ask {
		for _, l := range wrapped(line) {
			if f := CheckShell(l); f.Verdict != Ask {
				t.Errorf("%q: %s (%s), want ask", l, f.Verdict, f.Reason)
			}
		}
	}
	for _, line := range allow {
		for _, l := range wrapped(line) {
			if f := CheckShell(l); f.Verdict != Allow {
				t.Errorf("%q: %s (%s), want allow", l, f.Verdict, f.Reason)
			}
		}
	}
}
