"""Training the coordinators: sep-CMA-ES (the paper's), REINFORCE and random search baselines."""
