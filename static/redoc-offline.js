// Loaded by the ReDoc page before ReDoc itself (templates/drf_spectacular/redoc.html).
//
// ReDoc's side menu always shows Redocly's logo, loaded from Redocly's CDN;
// no ReDoc option turns it off. This server's pages fetch nothing from
// elsewhere, so the page's Content-Security-Policy blocks the request, with
// an error in the console every time the page opens. Here an image address
// on another origin is replaced by an empty one before the browser sees it:
// the browser fetches nothing and fires the image's error event, on which
// ReDoc drops the logo (its own fallback for a logo that fails to load).
"use strict";
(() => {
  const elsewhere = (value) => {
    let url;
    try {
      url = new URL(String(value), document.baseURI);
    } catch {
      return false; // not an address the browser could fetch either
    }
    return url.protocol !== "data:" && url.protocol !== "blob:" && url.origin !== location.origin;
  };
  const image = HTMLImageElement.prototype;
  // React (in ReDoc's bundle) sets `src` as an attribute; other code sets the property.
  const setAttribute = Element.prototype.setAttribute;
  image.setAttribute = function (name, value) {
    const blocked = String(name).toLowerCase() === "src" && elsewhere(value);
    return setAttribute.call(this, name, blocked ? "" : value);
  };
  const src = Object.getOwnPropertyDescriptor(image, "src");
  Object.defineProperty(image, "src", {
    ...src,
    set(value) {
      src.set.call(this, elsewhere(value) ? "" : value);
    },
  });
})();
