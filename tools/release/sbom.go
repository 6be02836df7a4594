package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// An sbom is an SPDX 2.3 document of what an image or archive carries:
// toolgate, the Go modules linked into it and the Debian packages.
type sbom struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      spdxCreation   `json:"creationInfo"`
	Packages          []spdxPackage  `json:"packages"`
	Relationships     []spdxRelation `json:"relationships"`
}

type spdxCreation struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string       `json:"name"`
	SPDXID           string       `json:"SPDXID"`
	VersionInfo      string       `json:"versionInfo"`
	DownloadLocation string       `json:"downloadLocation"`
	FilesAnalyzed    bool         `json:"filesAnalyzed"`
	LicenseConcluded string       `json:"licenseConcluded,omitempty"`
	Comment          string       `json:"comment,omitempty"`
	ExternalRefs     []spdxExtRef `json:"externalRefs,omitempty"`
}

type spdxExtRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelation struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

const rootID = "SPDXRef-toolgate"

func newSBOM(o options, name string) *sbom {
	s := &sbom{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              name + " " + o.Stamp.Version,
		DocumentNamespace: source + "/spdx/" + name + "-" + o.Stamp.Version + "-" + o.Stamp.Commit,
		CreationInfo:      spdxCreation{Created: o.Stamp.Time.Format(time.RFC3339), Creators: []string{"Tool: toolgate tools/release"}},
	}
	s.Packages = append(s.Packages, spdxPackage{
		Name: name, SPDXID: rootID, VersionInfo: o.Stamp.Version, DownloadLocation: "git+" + source + "@" + o.Stamp.Commit,
		LicenseConcluded: "Apache-2.0", Comment: "commit " + o.Stamp.Commit,
		ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/github.com/toolgate/toolgate@" + o.Stamp.Version}},
	})
	s.Relationships = append(s.Relationships, spdxRelation{"SPDXRef-DOCUMENT", "DESCRIBES", rootID})
	return s
}

var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func (s *sbom) add(kind, name, version, purl string) {
	id := "SPDXRef-" + kind + "-" + spdxIDChars.ReplaceAllString(name+"-"+version, "-")
	s.Packages = append(s.Packages, spdxPackage{
		Name: name, SPDXID: id, VersionInfo: version, DownloadLocation: "NOASSERTION",
		ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", purl}},
	})
	s.Relationships = append(s.Relationships, spdxRelation{rootID, "CONTAINS", id})
}

// addDebian lists the Debian packages an image's arch variant unpacked.
func (s *sbom) addDebian(arch string, pkgs []debPackage) {
	for _, p := range pkgs {
		s.add("deb-"+arch, p.Name, p.Version, fmt.Sprintf("pkg:deb/debian/%s@%s?arch=%s", p.Name, p.Version, p.Arch))
	}
}

// addGo lists the Go modules linked into a program (go version -m).
func (s *sbom) addGo(program string) error {
	out, err := command("", nil, goCommand(), "version", "-m", program)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && f[0] == "dep" {
			s.add("go", f[1], f[2], "pkg:golang/"+f[1]+"@"+f[2])
		}
	}
	return sc.Err()
}

func (s *sbom) write(file string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}
