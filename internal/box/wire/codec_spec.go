package wire

// InitSpec on the wire (field numbers in codec.go).

func encodeInitSpec(e *encoder, s *InitSpec) {
	e.str(specTask, s.Task)
	e.bool(specSwitchUsers, s.SwitchUsers)
	e.strs(specLower, s.Lower)
	e.str(specLayerDir, s.LayerDir)
	e.str(specLayerImage, s.LayerImage)
	e.bool(specLayerMounted, s.LayerMounted)
	e.int(specDiskMiB, int64(s.DiskMiB))
	e.int(specTmpMiB, int64(s.TmpMiB))
	e.str(specMerged, s.Merged)
	e.str(specWorkspace, s.Workspace)
	e.bool(specWorkspaceOverlay, s.WorkspaceOverlay)
	e.strs(specProtected, s.Protected)
	e.strs(specEmpty, s.Empty)
	e.strs(specHide, s.Hide)
	e.str(specHermesExe, s.HermesExe)
	e.strs(specHermesNames, s.HermesNames)
	e.str(specHostname, s.Hostname)
	e.bytes(specCACertPEM, s.CACertPEM)
	e.int(specEgressPort, int64(s.EgressPort))
	e.bool(specUserNS, s.UserNS)
	e.bool(specLandlock, s.Landlock)
	e.str(specAttachSocket, s.AttachSocket)
	e.int(specAttachIdle, int64(s.AttachIdle))
	e.strs(specEnv, s.Env)
	e.str(specCgroup, s.Cgroup)
	for _, uid := range s.SudoUIDs {
		// One entry per uid, 0 (root) too.
		e.b = appendVarintField(e.b, specSudoUIDs, uint64(uid))
	}
	e.strs(specSudoPathDirs, s.SudoPathDirs)
}

func (d *decoder) decodeInitSpec(b []byte, s *InitSpec) error {
	return d.fields(b, func(f field) error {
		switch f.num {
		case specTask:
			s.Task = f.str()
		case specSwitchUsers:
			s.SwitchUsers = f.bool()
		case specLower:
			s.Lower = append(s.Lower, f.str())
		case specLayerDir:
			s.LayerDir = f.str()
		case specLayerImage:
			s.LayerImage = f.str()
		case specLayerMounted:
			s.LayerMounted = f.bool()
		case specDiskMiB:
			s.DiskMiB = int(f.int())
		case specTmpMiB:
			s.TmpMiB = int(f.int())
		case specMerged:
			s.Merged = f.str()
		case specWorkspace:
			s.Workspace = f.str()
		case specWorkspaceOverlay:
			s.WorkspaceOverlay = f.bool()
		case specProtected:
			s.Protected = append(s.Protected, f.str())
		case specEmpty:
			s.Empty = append(s.Empty, f.str())
		case specHide:
			s.Hide = append(s.Hide, f.str())
		case specHermesExe:
			s.HermesExe = f.str()
		case specHermesNames:
			s.HermesNames = append(s.HermesNames, f.str())
		case specHostname:
			s.Hostname = f.str()
		case specCACertPEM:
			s.CACertPEM = f.data()
		case specEgressPort:
			s.EgressPort = int(f.int())
		case specUserNS:
			s.UserNS = f.bool()
		case specLandlock:
			s.Landlock = f.bool()
		case specAttachSocket:
			s.AttachSocket = f.str()
		case specAttachIdle:
			s.AttachIdle = f.dur()
		case specEnv:
			s.Env = append(s.Env, f.str())
		case specCgroup:
			s.Cgroup = f.str()
		case specSudoUIDs:
			s.SudoUIDs = append(s.SudoUIDs, f.u32())
		case specSudoPathDirs:
			s.SudoPathDirs = append(s.SudoPathDirs, f.str())
		}
		return nil
	})
}
