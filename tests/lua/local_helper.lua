-- A module next to the test recipes: found because the recipe's own folder is on the search path.
return { answer = 42 }
