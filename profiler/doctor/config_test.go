package doctor

import "testing"

func TestPickConfig(t *testing.T) {
	got := pickConfig(map[string]string{"CONFIG_HZ": "1000", "CONFIG_UNRELATED": "y"})
	if got["CONFIG_HZ"] != "1000" || got["CONFIG_KPROBES"] != "n" {
		t.Errorf("pickConfig = %v", got)
	}
	if _, ok := got["CONFIG_UNRELATED"]; ok {
		t.Error("pickConfig kept an option doctor does not report")
	}
	if pickConfig(nil) != nil {
		t.Error("unknown config must stay nil, not read as all-unset")
	}
}
