# Sourced by the bench scripts that run toolgate with its toolgate-sandbox
# (bench/sandbox, bench/startup). toolgate uses the helper beside it only
# when both record the same clean commit, so they are built from a clone
# (a worktree build stamps no commit).
#
#   clean_builds REPO WORK [BASE_REVISION]
#
# builds HEAD into WORK/head (and BASE_REVISION into WORK/base), each from
# its clone WORK/src-NAME, and sets bins to the toolgate binaries: base
# first, then head.
clean_builds() {
	local repo="$1" work="$2" base="${3:-}"
	_clean_build "$repo" "$work" HEAD head
	bins=("$work/head/toolgate")
	if [ -n "$base" ]; then
		_clean_build "$repo" "$work" "$base" base
		bins=("$work/base/toolgate" "${bins[@]}")
	fi
}

_clean_build() { # REPO WORK REVISION NAME
	git clone --quiet "$1" "$2/src-$4"
	git -C "$2/src-$4" checkout --quiet --detach "$(git -C "$1" rev-parse "$3")"
	(cd "$2/src-$4" && go build -buildvcs=true -o "$2/$4/" ./cmd/toolgate ./cmd/toolgate-sandbox)
	go version -m "$2/$4/toolgate-sandbox" | grep -q 'vcs.modified=false' ||
		{ echo "the $4 build records no clean commit: toolgate would not use its toolgate-sandbox" >&2; exit 1; }
}
