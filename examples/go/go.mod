module tokconf.example/gpt2adapter

go 1.19
