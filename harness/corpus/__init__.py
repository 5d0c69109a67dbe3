"""What is recorded: the corpus files (`files`), llama.cpp's own test inputs (`upstream`), each
vocabulary's special-token cases (`vocab_cases`) and the seeded fuzz strings (`generator`)."""
