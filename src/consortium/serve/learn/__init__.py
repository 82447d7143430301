"""`consortium serve --learn DIR`: the team learns while it serves. Served requests become records
rows (`traffic`), clients label them (`labels`), a background worker refits the answer-aware kinds
on the labelled traffic and judges the best against the serving policy with `evolve`'s guards
(`refit`), an adopted folder is written as `DIR/policies/vN` (`versions`) and swapped in between
requests; a seeded share of requests is explored with shadow calls within a budget (`explore`).
`learner.Learner` holds them together for the server."""
