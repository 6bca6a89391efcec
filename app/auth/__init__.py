"""Who calls and what they may do: bearer tokens, scopes per route, ACLs per workflow."""
