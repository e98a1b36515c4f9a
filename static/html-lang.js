// Loaded first by the API docs pages (templates/drf_spectacular/): drf-spectacular's
// pages open with a bare <html>, and a screen reader must be told their language.
"use strict";
document.documentElement.lang ||= "en";
