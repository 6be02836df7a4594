// Command release builds toolgate's release artifacts from a git checkout,
// offline but for Go modules and Debian packages, and reproducibly: two
// builds of one commit give the same bytes.
//
//	release image    dist/image/toolgate/ and dist/image/toolgate-runner/:
//	                 OCI image layouts for linux/amd64 and linux/arm64, each
//	                 with its SBOM beside it (NAME.spdx.json)
//	release package  dist/: archives for linux, darwin and windows on amd64
//	                 and arm64, .deb and .rpm packages, server.json and a
//	                 checksums file
//
// No Docker daemon and no container registry is used: the images' bases are
// assembled here, the lean one from Debian's CA certificates and time zones,
// the runner's from the Debian packages deploy/image/toolgate-runner.packages
// names (and their dependencies), downloaded for each architecture by apt
// into .cache/image/ (the host's apt sources, a private apt state).
//
// The version and commit come from git and are stamped into the programs by
// -ldflags; every file's time is SOURCE_DATE_EPOCH, else the commit's time.
// Run it through make: make image, make package.
package main
