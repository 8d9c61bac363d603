# Generates a .cpp holding resources/imagenet_classes.txt (ImageNet-1k class names in label
# order, as torchvision lists them) so the binary needs no data file at run time.
file(READ ${INPUT} LTFIT_CLASSES_TEXT)
file(WRITE ${OUTPUT} "// Generated from resources/imagenet_classes.txt by cmake/embed_classes.cmake.\n"
  "namespace ltfit { extern const char* const kImagenetClassesText;\n"
  "const char* const kImagenetClassesText = R\"ltfit(${LTFIT_CLASSES_TEXT})ltfit\"; }\n")
