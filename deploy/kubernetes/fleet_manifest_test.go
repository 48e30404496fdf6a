package kubernetes

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// objects decodes every document of path strictly into its API type;
// kinds lists them in order. A kind the manifests should not hold fails.
type objects struct {
	kinds        []string
	secrets      map[string]*corev1.Secret
	services     map[string]*corev1.Service
	daemonSets   []*appsv1.DaemonSet
	statefulSets []*appsv1.StatefulSet
}

func decode(t *testing.T, paths ...string) *objects {
	t.Helper()
	o := &objects{secrets: map[string]*corev1.Secret{}, services: map[string]*corev1.Service{}}
	for _, path := range paths {
		for _, doc := range documents(t, path) {
			var head struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatal(err)
			}
			o.kinds = append(o.kinds, head.Kind)
			var target any
			switch head.Kind {
			case "Namespace":
				target = &corev1.Namespace{}
			case "Secret":
				s := &corev1.Secret{}
				target = s
				defer func() { o.secrets[s.Name] = s }()
			case "Service":
				s := &corev1.Service{}
				target = s
				defer func() { o.services[s.Name] = s }()
			case "DaemonSet":
				d := &appsv1.DaemonSet{}
				o.daemonSets = append(o.daemonSets, d)
				target = d
			case "StatefulSet":
				s := &appsv1.StatefulSet{}
				o.statefulSets = append(o.statefulSets, s)
				target = s
			default:
				t.Fatalf("%s: unexpected kind %q", path, head.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, target); err != nil {
				t.Fatalf("%s: %s: %v", path, head.Kind, err)
			}
		}
	}
	return o
}

// env returns the container's variable name.
func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}

// arg returns the value of --flag=VALUE in c's args.
func arg(c corev1.Container, flag string) string {
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// secretValue is the value a SecretKeyRef names, "" when the manifests
// hold no such Secret key.
func (o *objects) secretValue(ref *corev1.SecretKeySelector) string {
	if ref == nil || o.secrets[ref.Name] == nil {
		return ""
	}
	return o.secrets[ref.Name].StringData[ref.Key]
}

// The fleet manifest (issue 29): node servers as a DaemonSet, privileged,
// HERMES_HOME on a hostPath, keys and fleet token from a Secret, the
// catalog URL from a Secret, advertised addresses from the pod IP, a
// Service in front.
func TestFleetManifestIsValid(t *testing.T) {
	o := decode(t, "hermes-sandbox-fleet.yaml")
	if want := []string{"Namespace", "Secret", "Secret", "DaemonSet", "Service"}; !slices.Equal(o.kinds, want) {
		t.Fatalf("kinds %v, want %v", o.kinds, want)
	}
	ds, svc := o.daemonSets[0], o.services["hermes-sandbox"]
	if svc == nil {
		t.Fatal("no hermes-sandbox Service")
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if ds.Spec.Template.Labels[k] != v || svc.Spec.Selector[k] != v {
			t.Fatalf("label %s=%s: the DaemonSet's selector, its pods and the Service disagree", k, v)
		}
	}
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["api"] != 3000 || ports["envd"] != 49983 {
		t.Fatalf("container ports %v, want api 3000 and envd 49983 (the E2B SDK's)", ports)
	}
	for _, p := range svc.Spec.Ports {
		if _, ok := ports[p.TargetPort.StrVal]; !ok {
			t.Fatalf("Service port %s targets %q, which the container does not name", p.Name, p.TargetPort.StrVal)
		}
	}
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Fatal("the box host needs a privileged container (namespaces, overlayfs, cgroups)")
	}
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 25 {
		t.Fatal("terminationGracePeriodSeconds must be at least 25 (the server's shutdown bound)")
	}
	if rp := c.ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/health" {
		t.Fatal("the readiness probe must GET /health")
	}
	// HERMES_HOME (layers, boxes, the workspace) on the node's disk.
	home, _ := env(c, "HERMES_HOME")
	if !onVolume(c, pod, home.Value, func(v corev1.Volume) bool { return v.HostPath != nil }) {
		t.Fatalf("HERMES_HOME %q is not on a hostPath volume: a new pod would lose the node's paused sandboxes", home.Value)
	}
	if ws := arg(c, "--workspace"); !strings.HasPrefix(ws, home.Value+"/") {
		t.Fatalf("--workspace %q is not under HERMES_HOME's hostPath", ws)
	}
	// Keys and the fleet token: files of a mounted Secret that holds them.
	for flag, key := range map[string]string{"--api-keys-file": "keys", "--fleet-token-file": "fleet-token"} {
		file := arg(c, flag)
		if !onVolume(c, pod, file, func(v corev1.Volume) bool {
			return v.Secret != nil && o.secrets[v.Secret.SecretName] != nil && o.secrets[v.Secret.SecretName].StringData[key] != "" &&
				strings.HasSuffix(file, "/"+key)
		}) {
			t.Fatalf("%s=%q is not key %q of a Secret in the manifest mounted there", flag, file, key)
		}
	}
	// The catalog: a postgres:// URL from a Secret, in the environment.
	db, ok := env(c, "HERMES_DATABASE_URL")
	if !ok || db.ValueFrom == nil || !strings.HasPrefix(o.secretValue(db.ValueFrom.SecretKeyRef), "postgres://") {
		t.Fatal("HERMES_DATABASE_URL must come from a Secret holding a postgres:// URL")
	}
	if strings.Contains(strings.Join(c.Args, " "), "postgres://") {
		t.Fatal("a catalog URL in the args shows in ps; keep it in HERMES_DATABASE_URL")
	}
	// Node name and advertised addresses from the downward API, defined
	// before the args use them (Kubernetes expands $(VAR) only then).
	for v, field := range map[string]string{"NODE_NAME": "spec.nodeName", "POD_IP": "status.podIP"} {
		e, ok := env(c, v)
		if !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != field {
			t.Fatalf("env %s must come from the downward API's %s", v, field)
		}
	}
	for flag, want := range map[string]string{"--node": "$(NODE_NAME)", "--advertise-api": "$(POD_IP):3000", "--advertise-envd": "$(POD_IP):49983"} {
		if got := arg(c, flag); got != want {
			t.Fatalf("%s=%q, want %q", flag, got, want)
		}
	}
}

// onVolume reports whether path lies on a volume mount of c whose volume
// is one kind accepts.
func onVolume(c corev1.Container, pod corev1.PodSpec, path string, kind func(corev1.Volume) bool) bool {
	for _, m := range c.VolumeMounts {
		if path != m.MountPath && !strings.HasPrefix(path, m.MountPath+"/") {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && kind(v) {
				return true
			}
		}
	}
	return false
}

// The optional PostgreSQL: one StatefulSet pod on a volume claim, behind
// the headless Service the fleet's catalog URL names, with the user,
// database and password that URL holds.
func TestPostgresManifestMatchesTheCatalogURL(t *testing.T) {
	o := decode(t, "hermes-sandbox-fleet.yaml", "postgres.yaml")
	if len(o.statefulSets) != 1 {
		t.Fatalf("%d StatefulSets, want the one PostgreSQL", len(o.statefulSets))
	}
	ss := o.statefulSets[0]
	if ss.Spec.Replicas == nil || *ss.Spec.Replicas != 1 || len(ss.Spec.VolumeClaimTemplates) != 1 {
		t.Fatal("PostgreSQL: one replica on a volume claim")
	}
	svc := o.services[ss.Spec.ServiceName]
	if svc == nil || svc.Spec.ClusterIP != "None" {
		t.Fatalf("the StatefulSet's serviceName %q is not a headless Service of the manifest", ss.Spec.ServiceName)
	}
	for k, v := range ss.Spec.Selector.MatchLabels {
		if ss.Spec.Template.Labels[k] != v || svc.Spec.Selector[k] != v {
			t.Fatalf("label %s=%s: the StatefulSet's selector, its pod and the Service disagree", k, v)
		}
	}
	c := ss.Spec.Template.Spec.Containers[0]
	u, err := url.Parse(o.secrets["hermes-sandbox-catalog"].StringData["url"])
	if err != nil {
		t.Fatal(err)
	}
	user, _ := env(c, "POSTGRES_USER")
	dbName, _ := env(c, "POSTGRES_DB")
	pass, _ := env(c, "POSTGRES_PASSWORD")
	urlPass, _ := u.User.Password()
	if pass.ValueFrom == nil || o.secretValue(pass.ValueFrom.SecretKeyRef) != urlPass {
		t.Fatal("POSTGRES_PASSWORD must come from a Secret holding the catalog URL's password")
	}
	if u.User.Username() != user.Value || strings.TrimPrefix(u.Path, "/") != dbName.Value {
		t.Fatalf("catalog URL user %q database %q; PostgreSQL makes %q and %q", u.User.Username(), u.Path, user.Value, dbName.Value)
	}
	if want := svc.Name + "." + svc.Namespace + ".svc"; u.Hostname() != want || u.Port() != "5432" {
		t.Fatalf("catalog URL host %q, want %s:5432 (the headless Service)", u.Host, want)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == svc.Spec.Ports[0].TargetPort.StrVal }) {
		t.Fatal("the PostgreSQL Service targets a port the container does not name")
	}
}
