module example.invalid/wanderer

go 1.19
