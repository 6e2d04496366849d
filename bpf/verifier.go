package bpf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
)

// ShortError keeps the first line of a verifier log, for every loader's
// one-line refusal: users need the reason, not 2,000 lines of
// instructions. Other errors pass unchanged.
func ShortError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("%s", strings.SplitN(ve.Error(), "\n", 2)[0])
	}
	return err
}
