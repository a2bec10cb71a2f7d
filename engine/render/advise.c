/* advise */
static int gl_advise_placeholder;
