package driver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// SignatureNamespace is the namespace of every signature of an approval
// (ssh-keygen -Y sign -n chunks): a signature made for git or a file is
// never taken for one.
const SignatureNamespace = "chunks"

// SignDigest signs digest (the 64 hex characters, no newline) with the SSH
// private key in keyPEM (an OpenSSH or PEM private key without a
// passphrase), as ssh-keygen -Y sign -n chunks -O hashalg=sha512 would:
// the armored signature ([Approve] keeps it with the approval).
func SignDigest(keyPEM []byte, digest string) (string, error) {
	if err := CheckDigest("digest", digest); err != nil {
		return "", err
	}
	signer, err := ssh.ParsePrivateKey(keyPEM)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return "", Invalidf("sign: the key has a passphrase, which chunks does not read: sign with ssh-keygen -Y sign -n chunks, or use a key without one")
		}
		return "", Invalidf("sign: not an SSH private key: %v", err)
	}
	sig, err := sshsig.Sign(strings.NewReader(digest), signer, sshsig.HashSHA512, SignatureNamespace)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	return string(sshsig.Armor(sig)), nil
}

// SignatureCheck is what [VerifySignature] found.
type SignatureCheck struct {
	Principal   string `json:"principal"`   // the allowed_signers line's principal that matched
	Fingerprint string `json:"fingerprint"` // the key's, SHA256:...
}

// VerifySignature checks that signature (armored) is a signature of digest
// in namespace chunks by a key that allowedSigners (git's allowed_signers
// format: "principals [options] keytype base64-key [comment]" a line)
// lists for approver, the role that approved: a principal pattern that
// matches it, and a namespaces="..." option, when given, that names chunks.
// Anything else is an [ErrConflict] saying why.
func VerifySignature(allowedSigners []byte, approver, digest, signature string) (SignatureCheck, error) {
	sig, err := sshsig.Unarmor([]byte(signature))
	if err != nil {
		return SignatureCheck{}, NewError(ErrConflict, err, "signature: not an SSH signature: %v", err)
	}
	if sig.Namespace != SignatureNamespace {
		return SignatureCheck{}, NewError(ErrConflict, nil, "signature: made for namespace %q, not %q", sig.Namespace, SignatureNamespace)
	}
	fingerprint := ssh.FingerprintSHA256(sig.PublicKey)
	signers, err := parseAllowedSigners(allowedSigners)
	if err != nil {
		return SignatureCheck{}, err
	}
	for _, s := range signers {
		if !bytes.Equal(s.key.Marshal(), sig.PublicKey.Marshal()) || !s.matches(approver) {
			continue
		}
		if err := sshsig.Verify(strings.NewReader(digest), sig, s.key, sig.HashAlgorithm, SignatureNamespace); err != nil {
			return SignatureCheck{}, NewError(ErrConflict, err, "signature by %s (%s) does not verify for digest %s: %v", approver, fingerprint, digest, err)
		}
		return SignatureCheck{Principal: s.principal, Fingerprint: fingerprint}, nil
	}
	return SignatureCheck{}, NewError(ErrConflict, nil, "signature: key %s is not an allowed signer of %s (namespace %s) in the allowed signers",
		fingerprint, approver, SignatureNamespace)
}

// CheckAllowedSigners returns an [ErrInvalid] naming the first line of
// allowedSigners that is not in git's allowed_signers format.
func CheckAllowedSigners(allowedSigners []byte) error {
	_, err := parseAllowedSigners(allowedSigners)
	return err
}

// allowedSigner is one line of an allowed_signers file.
type allowedSigner struct {
	principal  string   // as written (comma-separated patterns)
	patterns   []string // each principal pattern
	namespaces []string // namespaces="..." (nil: any)
	key        ssh.PublicKey
}

// matches says whether role is one of the line's principals (patterns as
// git and ssh-keygen take them: * and ?) and the line allows chunks'
// namespace.
func (s allowedSigner) matches(role string) bool {
	if s.namespaces != nil && !slices.Contains(s.namespaces, SignatureNamespace) {
		return false
	}
	for _, p := range s.patterns {
		if ok, err := path.Match(p, role); err == nil && ok {
			return true
		}
	}
	return false
}

// parseAllowedSigners reads git's allowed_signers format: blank lines and
// # comments are skipped; every other line is principals, then what an
// authorized_keys line is (options, key type, key, comment). A line that
// is neither is an [ErrInvalid] naming it.
func parseAllowedSigners(data []byte) ([]allowedSigner, error) {
	var out []allowedSigner
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		principal, rest, ok := strings.Cut(line, " ")
		if !ok {
			return nil, Invalidf("allowed signers: line %d: want principals and a key, got %s", n, Excerpt(line, true))
		}
		key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
		if err != nil {
			return nil, Invalidf("allowed signers: line %d: %v", n, err)
		}
		s := allowedSigner{principal: principal, patterns: strings.Split(principal, ","), key: key}
		for _, o := range options {
			name, value, _ := strings.Cut(o, "=")
			if strings.EqualFold(name, "namespaces") {
				s.namespaces = strings.Split(strings.Trim(value, `"`), ",")
			}
		}
		out = append(out, s)
	}
	return out, sc.Err()
}
