/* no-rm-outside: a `tool_call` gate. Before a bash call runs, smith sends the call as
   JSON ({"type": "tool_call", "name": "bash", "arguments": {"command": "..."}, ...});
   a recursive `rm` (-r, -R, -rf, -fr, --recursive) naming a path outside the project
   (absolute, from the home directory, climbing out with .., or from a $VARIABLE whose
   value the gate cannot know) is denied with a
   reason the model sees. Everything else is allowed (`[]`: no action). */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "smith_plugin.h"

/* --- a little JSON: enough to find a string member of an object ------------------ */

typedef struct {
  const char *at, *end;
} cursor_t;

static void skip_space(cursor_t *c) {
  while (c->at < c->end && (*c->at == ' ' || *c->at == '\n' || *c->at == '\r' || *c->at == '\t'))
    c->at++;
}

/* Reads a JSON string at c (after its opening quote is checked) into out (at most
   cap-1 bytes, NUL-terminated; \uXXXX escapes become '?'). False if malformed. */
static bool read_string(cursor_t *c, char *out, size_t cap) {
  size_t n = 0;
  if (c->at >= c->end || *c->at != '"') return false;
  c->at++;
  while (c->at < c->end && *c->at != '"') {
    char ch = *c->at++;
    if (ch == '\\') {
      if (c->at >= c->end) return false;
      char e = *c->at++;
      switch (e) {
        case 'n': ch = '\n'; break;
        case 't': ch = '\t'; break;
        case 'r': ch = '\r'; break;
        case 'b': ch = '\b'; break;
        case 'f': ch = '\f'; break;
        case 'u':
          if (c->end - c->at < 4) return false;
          c->at += 4;
          ch = '?';
          break;
        default: ch = e; /* \" \\ \/ */
      }
    }
    if (out && n + 1 < cap) out[n++] = ch;
  }
  if (c->at >= c->end) return false;
  c->at++; /* the closing quote */
  if (out) out[n] = '\0';
  return true;
}

/* Skips one JSON value of any kind. */
static bool skip_value(cursor_t *c) {
  skip_space(c);
  if (c->at >= c->end) return false;
  if (*c->at == '"') return read_string(c, NULL, 0);
  if (*c->at == '{' || *c->at == '[') {
    int depth = 0;
    while (c->at < c->end) {
      if (*c->at == '"') {
        if (!read_string(c, NULL, 0)) return false;
        continue;
      }
      if (*c->at == '{' || *c->at == '[') depth++;
      if (*c->at == '}' || *c->at == ']') depth--;
      c->at++;
      if (depth == 0) return true;
    }
    return false;
  }
  while (c->at < c->end && *c->at != ',' && *c->at != '}' && *c->at != ']') c->at++;
  return true;
}

/* Moves c to the value of member `key` of the object at c. */
static bool find_member(cursor_t *c, const char *key) {
  char name[64];
  skip_space(c);
  if (c->at >= c->end || *c->at != '{') return false;
  c->at++;
  for (;;) {
    skip_space(c);
    if (c->at < c->end && *c->at == '}') return false;
    if (!read_string(c, name, sizeof name)) return false;
    skip_space(c);
    if (c->at >= c->end || *c->at != ':') return false;
    c->at++;
    skip_space(c);
    if (strcmp(name, key) == 0) return true;
    if (!skip_value(c)) return false;
    skip_space(c);
    if (c->at < c->end && *c->at == ',') c->at++;
  }
}

/* --- the rule ------------------------------------------------------------------ */

static bool outside(const char *word) {
  while (*word == '"' || *word == '\'') word++; /* "/tmp/x" is /tmp/x */
  size_t n = strcspn(word, "\"'");                /* up to a closing quote */
  bool up = (n == 2 && strncmp(word, "..", 2) == 0) || strncmp(word, "../", 3) == 0 ||
            strstr(word, "/../") != NULL || (n >= 3 && strncmp(word + n - 3, "/..", 3) == 0);
  return word[0] == '/' || word[0] == '~' || word[0] == '$' || up;
}

/* The first path a recursive rm in `command` names outside the project, or NULL.
   Words are split on blanks and shell separators; a word's leading quotes are skipped,
   other quoting is not interpreted. */
static const char *rm_outside(char *command) {
  static const char *seps = " \t\n;&|()";
  bool in_rm = false, recursive = false;
  const char *found = NULL;
  for (char *word = strtok(command, seps); word; word = strtok(NULL, seps)) {
    if (strcmp(word, "rm") == 0 || (strlen(word) > 3 && strcmp(word + strlen(word) - 3, "/rm") == 0)) {
      in_rm = true, recursive = false, found = NULL;
    } else if (in_rm && word[0] == '-' && word[1] != '-') {
      recursive = recursive || strchr(word, 'r') || strchr(word, 'R');
    } else if (in_rm && strcmp(word, "--recursive") == 0) {
      recursive = true;
    } else if (in_rm && word[0] != '-' && outside(word)) {
      found = word;
    }
    if (in_rm && recursive && found) return found;
  }
  return NULL;
}

/* Appends `text` to the JSON string being written in ret, escaped. */
static void append_escaped(smith_string_t *ret, const char *text) {
  char one[3] = {0};
  for (; *text; text++) {
    if ((unsigned char)*text < 0x20) continue; /* control characters: left out */
    one[0] = (*text == '"' || *text == '\\') ? '\\' : *text;
    one[1] = one[0] == '\\' ? *text : '\0';
    smith_string_append_cstr(ret, one);
  }
}

bool smith_on_event(smith_string_t event, smith_string_t *ret, smith_string_t *err) {
  (void)err;
  static char tool[64], command[8192];
  cursor_t c = {(const char *)event.ptr, (const char *)event.ptr + event.len};
  cursor_t at = c;
  smith_string_set(ret, "[]");
  if (!find_member(&at, "name") || !read_string(&at, tool, sizeof tool) || strcmp(tool, "bash") != 0)
    return true;
  at = c;
  if (!find_member(&at, "arguments") || !find_member(&at, "command") ||
      !read_string(&at, command, sizeof command))
    return true;
  const char *path = rm_outside(command);
  if (path) {
    smith_string_set(ret, "[{\"action\": \"deny_call\", \"reason\": \"no-rm-outside: a recursive rm of ");
    append_escaped(ret, path);
    smith_string_append_cstr(ret, ", which is outside the project, is not allowed\"}]");
  }
  return true;
}
