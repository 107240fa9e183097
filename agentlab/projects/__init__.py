"""Projects and roles: a team's runs, tasks, policies and API tokens, and who may do what with them."""
