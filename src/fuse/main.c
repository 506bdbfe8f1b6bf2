/* main.c - not yet written */
int main(void) { return 1; }
