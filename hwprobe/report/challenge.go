package report

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// ChallengeTag is the EC2 instance tag through which the validation gate
// hands each node a challenge: 32 random bytes as 64 hex characters. The
// node reads it from the instance metadata service
// (tags/instance/<ChallengeTag>) and answers with a report whose
// Challenge field holds it.
const ChallengeTag = "mlplatform-hwprobe-challenge"

// ChallengeLen is the length of a challenge in bytes.
const ChallengeLen = 32

// ParseChallenge checks a challenge as read from the tag (surrounding
// white space aside, exactly 64 hex characters) and returns it in the
// report's form, lowercase hex, with its 32 bytes.
func ParseChallenge(s string) (string, []byte, error) {
	s = strings.TrimSpace(s)
	if len(s) != 2*ChallengeLen {
		return "", nil, fmt.Errorf("challenge %q: %d characters, want %d hex characters", short(s), len(s), 2*ChallengeLen)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return "", nil, fmt.Errorf("challenge %q: not hex", short(s))
	}
	return hex.EncodeToString(b), b, nil
}

// short keeps an unexpected value readable in a log line.
func short(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
