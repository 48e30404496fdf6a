package snapshot

// ImageLayerPolicy is the policy for a container image layer that its
// reader has already translated to overlay's format: character devices
// 0:0 (overlay whiteouts) are kept and any other device node refused,
// and, as for an archive a box wrote, setuid/setgid bits and
// security.capability are dropped and overlay redirect or metacopy
// xattrs refuse the layer.
func ImageLayerPolicy() ExtractPolicy {
	return ExtractPolicy{keepWhiteouts: true, fromBox: true}
}
