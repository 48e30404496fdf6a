package session

import (
	"strings"

	"github.com/hermes-go/hermes/internal/config"

	"github.com/hermes-go/hermes/internal/tool"
)

// addSendMessage adds send_message when a platform can be reached
// (Options.Messenger): a session messages its own chat (chatOrigin), the
// home channels and messaging.allowed_targets.
func (rt *Runtime) addSendMessage(all *tool.Registry) {
	if rt.opts.Messenger == nil {
		return
	}
	home := map[string]string{}
	for _, p := range config.MessagingPlatforms() { // each one's home channel: <PLATFORM>_HOME_CHANNEL, Hermes's variable
		v := strings.TrimSpace(rt.opts.Config.Getenv(strings.ToUpper(p) + "_HOME_CHANNEL"))
		if v == "" {
			continue
		}
		if !strings.HasPrefix(v, p+":") {
			v = p + ":" + v // Hermes's variable holds the chat id alone
		}
		home[p] = v
	}
	all.Add(tool.NewSendMessage(tool.SendMessageOptions{
		Messenger: rt.opts.Messenger, Origin: rt.chatOrigin, Home: home,
		Allowed: rt.cfg.Messaging.AllowedTargets, Redact: rt.redact.Redact,
	}))
}
