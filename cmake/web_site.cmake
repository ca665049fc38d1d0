# Run after the browser build links (cmake/web.cmake): writes the site's service worker with a
# cache name made from the hashes of the files it caches, so that a new build is fetched anew.
set(files index.html site.js class_client.js site.css opscope.js opscope.wasm opscope.data)
set(joined "")
foreach(f IN LISTS files)
  file(SHA256 ${SITE}/${f} h)
  string(APPEND joined "${h}")
endforeach()
string(SHA256 version "${joined}")
string(SUBSTRING "${version}" 0 16 version)
file(READ ${TEMPLATE} text)
string(REPLACE "@OPSCOPE_SITE_VERSION@" "${version}" text "${text}")
file(WRITE ${SITE}/sw.js "${text}")
