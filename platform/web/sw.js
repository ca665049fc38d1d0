// opscope's service worker: keeps the site's files so that the page opens without a network
// once it has been loaded. The cache is named after the files' hashes (written at build time by
// cmake/web_site.cmake), so a new build on the server is fetched anew and the old cache dropped.
'use strict';

const CACHE = 'opscope-@OPSCOPE_SITE_VERSION@';
const FILES = ['./', 'index.html', 'site.js', 'class_client.js', 'site.css', 'opscope.js', 'opscope.wasm', 'opscope.data'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((names) => Promise.all(names.filter((n) => n.startsWith('opscope-') && n !== CACHE).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()));
});

// The site's own files from the cache (the address's query, ?lesson=5, does not matter);
// anything else from the network.
self.addEventListener('fetch', (event) => {
  if (event.request.method !== 'GET') return;
  const url = new URL(event.request.url);
  if (url.origin !== location.origin) return;
  event.respondWith(
    caches.open(CACHE)
      .then((cache) => cache.match(event.request, { ignoreSearch: true }))
      .then((hit) => hit || fetch(event.request)));
});
