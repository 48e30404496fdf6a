// Package kubernetes holds the Kubernetes manifest of `hermes sandbox
// serve`; its test validates the manifest offline against the Kubernetes
// API types (k8s.io/api), strictly: an unknown or misspelt field, a wrong
// type or a missing required piece fails, as `kubectl apply --validate`
// would fail against a cluster.
package kubernetes

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func TestManifestIsValid(t *testing.T) {
	var (
		deploy  appsv1.Deployment
		service corev1.Service
		kinds   []string
	)
	for _, doc := range documents(t, "hermes-sandbox.yaml") {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, head.Kind)
		var target any
		switch head.Kind {
		case "Namespace":
			target = &corev1.Namespace{}
		case "Secret":
			target = &corev1.Secret{}
		case "Deployment":
			target = &deploy
		case "Service":
			target = &service
		default:
			t.Fatalf("unexpected kind %q", head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("%s: %v", head.Kind, err)
		}
	}
	if want := []string{"Namespace", "Secret", "Deployment", "Service"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	// The selector must select the pod template, and the Service the pods.
	for k, v := range deploy.Spec.Selector.MatchLabels {
		if deploy.Spec.Template.Labels[k] != v || service.Spec.Selector[k] != v {
			t.Fatalf("label %s=%s: the Deployment's selector, its pods and the Service disagree", k, v)
		}
	}
	c := deploy.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["api"] != 3000 || ports["envd"] != 49983 {
		t.Fatalf("container ports %v, want api 3000 and envd 49983 (the E2B SDK's)", ports)
	}
	for _, p := range service.Spec.Ports {
		if _, ok := ports[p.TargetPort.StrVal]; !ok {
			t.Fatalf("Service port %s targets %q, which the container does not name", p.Name, p.TargetPort.StrVal)
		}
	}
	if rp := c.ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/health" {
		t.Fatal("the readiness probe must GET /health")
	}
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Fatal("the box host needs a privileged container (namespaces, overlayfs, cgroups)")
	}
	// hermes sandbox serve exits within 25 s of SIGTERM (its sandboxes
	// paused, not lost): the pod's grace must not cut that short.
	if g := deploy.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 25 {
		t.Fatal("terminationGracePeriodSeconds must be at least 25 (the server's shutdown bound)")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Fatal("the container must request CPU and memory")
	}
	args := strings.Join(c.Args, " ")
	// Bound beyond loopback, the server refuses to start without keys.
	if !strings.Contains(args, "0.0.0.0") || !strings.Contains(args, "--api-keys-file=") {
		t.Fatalf("args %q: a non-loopback bind needs --api-keys-file", args)
	}
	_, keysFile, _ := strings.Cut(args, "--api-keys-file=")
	keysFile, _, _ = strings.Cut(keysFile, " ")
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || strings.HasPrefix(keysFile, m.MountPath+"/")
	}
	if !mounted {
		t.Fatal("--api-keys-file is not on a mounted volume")
	}
}

// The strict check is not vacuous: a misspelt field is refused.
func TestManifestCheckCatchesTypos(t *testing.T) {
	bad := []byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  selctor: {app: x}\n")
	if err := yaml.UnmarshalStrict(bad, &corev1.Service{}); err == nil {
		t.Fatal("a misspelt field passed the strict check")
	}
}
