from hermes_rl_mcp.cli import main

raise SystemExit(main())
