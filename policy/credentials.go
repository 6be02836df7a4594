package policy

// CredentialPath is a file or folder under a home folder where programs
// keep credentials: keys, tokens, cloud and cluster logins, keyrings.
type CredentialPath struct {
	// Name is the path from the home folder, slash-separated: ".ssh",
	// ".config/gcloud".
	Name string
	// Reason says whose credentials are kept there.
	Reason string
}

// CredentialPaths returns the credential stores of a home folder. The
// upstream box of the gateway never shows them (they are not in its view,
// and a read or write grant that is, holds or lies in one is refused at
// load); the file tools' default deny rules cover the same files.
func CredentialPaths() []CredentialPath {
	return []CredentialPath{
		{".ssh", "ssh private keys, authorized_keys and known hosts"},
		{".aws", "AWS access keys and SSO tokens"},
		{".config/gcloud", "Google Cloud credentials and access tokens"},
		{".azure", "Azure CLI tokens"},
		{".kube", "Kubernetes cluster credentials (kubeconfig)"},
		{".docker", "Docker registry logins (config.json)"},
		{".npmrc", "npm registry tokens"},
		{".netrc", "logins of ftp, curl, git and pip over HTTP"},
		{".git-credentials", "git's stored HTTP credentials"},
		{".pypirc", "PyPI upload tokens"},
		{".gnupg", "GnuPG private keys"},
		{".password-store", "pass, the password store"},
		{".local/share/keyrings", "the GNOME keyring (secrets of desktop applications)"},
		{".config/gh", "GitHub CLI tokens"},
		{".config/hub", "hub's GitHub token"},
		{".config/op", "1Password CLI sessions"},
		{".config/rclone", "rclone's cloud storage credentials"},
		{".config/doctl", "DigitalOcean tokens"},
		{".oci", "Oracle Cloud API keys"},
		{".terraform.d", "Terraform Cloud tokens (credentials.tfrc.json)"},
		{".vault-token", "a HashiCorp Vault token"},
		{".pgpass", "PostgreSQL passwords"},
		{".my.cnf", "MySQL passwords"},
		{".cargo/credentials.toml", "crates.io tokens"},
		{".cargo/credentials", "crates.io tokens (older name)"},
		{".gem/credentials", "RubyGems API keys"},
		{".m2/settings.xml", "Maven repository passwords"},
		{".gradle/gradle.properties", "Gradle repository credentials and signing keys"},
		{".config/containers/auth.json", "Podman and Buildah registry logins"},
		{".toolgate", "toolgate's own state: audit log, pins, approvals"},
	}
}
