package toolbox

// RelayedOnly makes s answer piped headers as a toolbox that predates them does.
func RelayedOnly(s *Server) *Server {
	s.relayedOnly = true
	return s
}

// DroppingPipes makes s lose the pipes of piped requests, as a policy between containers might.
func DroppingPipes(s *Server) *Server {
	s.dropPassed = true
	return s
}
