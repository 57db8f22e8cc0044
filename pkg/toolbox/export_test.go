package toolbox

// RelayedOnly makes s answer piped headers as a toolbox that predates them does.
func RelayedOnly(s *Server) *Server {
	s.relayedOnly = true
	return s
}
