// The panels' own words in the window's language: English, or Chinese once a Chinese lesson is
// open (the app says which each frame). gettext's way: the English text, a printf format with
// its arguments in the same order in both languages, is the key; a text the table lacks shows
// in English (tests/test_viz_words.cpp checks that every tr("...") in viz/ has its Chinese).
#pragma once

namespace opscope::viz {

void set_chinese(bool chinese);
bool chinese();
// `english` in the window's language (the same pointer when English, or when untranslated).
const char* tr(const char* english);
// Whether the table has a Chinese text for `english`.
bool has_chinese(const char* english);

}  // namespace opscope::viz
